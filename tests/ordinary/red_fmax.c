// red_fmax: reduction
// expect: reduction
#include <math.h>

void red_fmax(int n, float a[n], float out[1]) {
  float m = a[0];
  for (int i = 1; i < n; i++)
    m = fmaxf(m, a[i]);
  out[0] = m;
}

// red_absmax_if: reduction
// expect: reduction
#include <math.h>

void red_absmax_if(int n, float a[n], float out[1]) {
  float m = 0.0f;
  for (int i = 0; i < n; i++)
    if (fabsf(a[i]) > m)
      m = fabsf(a[i]);
  out[0] = m;
}

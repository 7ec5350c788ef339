// red_sum_and_max: reduction
// expect: reduction
#include <math.h>

void red_sum_and_max(int n, float a[n], float out[2]) {
  float s = 0.0f, m = a[0];
  for (int i = 0; i < n; i++) {
    s += a[i];
    m = fmaxf(m, a[i]);
  }
  out[0] = s;
  out[1] = m;
}

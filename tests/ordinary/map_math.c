// map_math: basic
// expect: parallel i
#include <math.h>

void map_math(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++)
    a[i] = sqrtf(fabsf(b[i])) + expf(-c[i] * c[i]);
}

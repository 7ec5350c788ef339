/* upper: y <- y + U y for a strictly upper triangular U, in place: element i gathers the
 * elements after it, which later iterations overwrite (an entry snapshot frees the i loop). */
#include <stdio.h>

#include "kr_util.h"

#ifndef NU
#define NU 48
#endif

static void fill(int n, double KR_ARR2(u, NU, NU, n, n), double KR_ARR1(y, NU, n))
{
  unsigned seed = 11;
  for (int i = 0; i < n; i++) {
    y[i] = kr_random(&seed);
    for (int k = 0; k < n; k++)
      u[i][k] = kr_random(&seed) / n;
  }
}

void kernel_upper(int n, double KR_ARR2(u, NU, NU, n, n), double KR_ARR1(y, NU, n))
{
  int i, k;

#pragma scop
  for (i = 0; i < n; i++)
    for (k = i + 1; k < n; k++)
      y[i] = y[i] + u[i][k] * y[k];
#pragma endscop
}

int main(void)
{
  int n = NU;
  KR_NEW2(u, double, NU, NU);
  KR_NEW1(y, double, NU);
  fill(n, KR_USE(u), KR_USE(y));
  kr_timer_start();
  kernel_upper(n, KR_USE(u), KR_USE(y));
  kr_timer_print();
  double check = 0.0;
  for (int i = 0; i < n; i++)
    check += KR_USE(y)[i];
  printf("%0.6f\n", check);
  KR_FREE(u);
  KR_FREE(y);
  return 0;
}

/* smooth: time steps of a 5-point weighted average on a plate, between two grids. */
#include <stdio.h>

#include "kr_util.h"

#ifndef NX
#define NX 30
#define NY 26
#define STEPS 6
#endif

static void fill(int nx, int ny, double KR_ARR2(a, NX, NY, nx, ny), double KR_ARR2(b, NX, NY, nx, ny))
{
  unsigned seed = 5;
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < ny; j++) {
      a[i][j] = kr_random(&seed);
      b[i][j] = 0.0;
    }
}

void kernel_smooth(int steps, int nx, int ny, double KR_ARR2(a, NX, NY, nx, ny), double KR_ARR2(b, NX, NY, nx, ny))
{
  int t, i, j;

#pragma scop
  for (t = 0; t < steps; t++) {
    for (i = 1; i < nx - 1; i++)
      for (j = 1; j < ny - 1; j++)
        b[i][j] = 0.5 * a[i][j] + 0.125 * (a[i - 1][j] + a[i + 1][j] + a[i][j - 1] + a[i][j + 1]);
    for (i = 1; i < nx - 1; i++)
      for (j = 1; j < ny - 1; j++)
        a[i][j] = 0.5 * b[i][j] + 0.125 * (b[i - 1][j] + b[i + 1][j] + b[i][j - 1] + b[i][j + 1]);
  }
#pragma endscop
}

int main(void)
{
  int nx = NX, ny = NY;
  KR_NEW2(a, double, NX, NY);
  KR_NEW2(b, double, NX, NY);
  fill(nx, ny, KR_USE(a), KR_USE(b));
  kr_timer_start();
  kernel_smooth(STEPS, nx, ny, KR_USE(a), KR_USE(b));
  kr_timer_print();
  double check = 0.0;
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < ny; j++)
      check += KR_USE(a)[i][j];
  printf("%0.6f\n", check);
  KR_FREE(a);
  KR_FREE(b);
  return 0;
}

/* A PolyBench-style program: only kernel_atax is lowered. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include <sys/time.h>

#define M 38
#define N 42
#define DATA_TYPE double
#define DATA_PRINTF_MODIFIER "%0.2lf "

static double rtclock(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return tv.tv_sec + tv.tv_usec * 1.0e-6;
}

static void init_array(int m, int n, DATA_TYPE A[M][N], DATA_TYPE x[N]) {
  int i, j;
  DATA_TYPE fn = (DATA_TYPE)n;
  for (i = 0; i < n; i++)
    x[i] = 1 + (i / fn);
  for (i = 0; i < m; i++)
    for (j = 0; j < n; j++)
      A[i][j] = (DATA_TYPE)((i + j) % n) / (5 * m);
}

static void print_array(int n, DATA_TYPE y[N]) {
  for (int i = 0; i < n; i++) {
    fprintf(stderr, DATA_PRINTF_MODIFIER, y[i]);
    if (i % 20 == 0) fprintf(stderr, "\n");
  }
}

static void kernel_atax(int m, int n, DATA_TYPE A[M][N], DATA_TYPE x[N],
                        DATA_TYPE y[N], DATA_TYPE tmp[M]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    y[i] = 0;
  for (i = 0; i < m; i++) {
    tmp[i] = 0.0;
    for (j = 0; j < n; j++)
      tmp[i] = tmp[i] + A[i][j] * x[j];
    for (j = 0; j < n; j++)
      y[j] = y[j] + A[i][j] * tmp[i];
  }
#pragma endscop
}

int main(int argc, char **argv) {
  int m = M, n = N;
  double (*A)[M][N] = (double (*)[M][N])malloc(M * N * sizeof(double));
  double *x = malloc(N * sizeof(double));
  double *y = malloc(N * sizeof(double));
  double *tmp = malloc(M * sizeof(double));
  double t0 = rtclock();
  init_array(m, n, *A, x);
  kernel_atax(m, n, *A, x, y, tmp);
  printf("time: %f\n", rtclock() - t0);
  if (argc > 42 && !strcmp(argv[0], "")) print_array(n, y);
  free(A); free(x); free(y); free(tmp);
  return EXIT_SUCCESS;
}

/* heat: steady-state heat in a square plate by Jacobi sweeps, as a whole C program.
 *
 *   transpile --emit program examples/heat.c -o heat.cu && nvcc heat.cu -o heat && ./heat
 *
 * builds it for the GPU: heat_sweeps runs there (the program's own definition of it calls the
 * verified GPU version), everything else is the program as written.  `gcc examples/heat.c`
 * builds the same program for the CPU; both print the same numbers. */
#include <stdio.h>
#include <stdlib.h>

#define N 1024
#define SWEEPS 2000

/* Two Jacobi sweeps per step: v from u, then u from v (the edges hold their values). */
void heat_sweeps(int n, int steps, double u[N][N], double v[N][N])
{
  for (int t = 0; t < steps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        v[i][j] = 0.25 * (u[i - 1][j] + u[i + 1][j] + u[i][j - 1] + u[i][j + 1]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        u[i][j] = 0.25 * (v[i - 1][j] + v[i + 1][j] + v[i][j - 1] + v[i][j + 1]);
  }
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : N;
  double (*u)[N] = malloc(sizeof(double[N][N]));
  double (*v)[N] = malloc(sizeof(double[N][N]));

  if (n < 3 || n > N || u == NULL || v == NULL) {
    fprintf(stderr, "usage: heat [n], 3 <= n <= %d\n", N);
    return 1;
  }
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      u[i][j] = v[i][j] = (i == 0) ? 100.0 : 0.0; /* the top edge is hot */
  heat_sweeps(n, SWEEPS / 2, u, v);
  double sum = 0.0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      sum += u[i][j];
  printf("heat %dx%d after %d sweeps: u[8][n/2] %.6f, mean %.6f\n", n, n, SWEEPS, u[8][n / 2], sum / ((double)n * n));
  free(u);
  free(v);
  return 0;
}

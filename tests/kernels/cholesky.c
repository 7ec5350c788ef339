/* cholesky: in-place Cholesky decomposition A = L * L^T of a symmetric
 * positive definite matrix; L overwrites the lower triangle of A (the
 * strict upper triangle is left untouched). */
#include <math.h>

void kernel_cholesky(int n, double A[n][n])
{
  int i, j, k;

#pragma scop
  for (i = 0; i < n; i++) {
    /* j < i */
    for (j = 0; j < i; j++) {
      for (k = 0; k < j; k++)
        A[i][j] -= A[i][k] * A[j][k];
      A[i][j] /= A[j][j];
    }
    /* i == j */
    for (k = 0; k < i; k++)
      A[i][i] -= A[i][k] * A[i][k];
    A[i][i] = sqrt(A[i][i]);
  }
#pragma endscop
}

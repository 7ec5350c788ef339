/* syrk: symmetric rank-k update on the lower triangle of C.
 * C = alpha * A * A^T + beta * C (for j <= i only). */

void kernel_syrk(int n, int m, double alpha, double beta, double C[n][n],
                 double A[n][m])
{
  int i, j, k;

#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j <= i; j++)
      C[i][j] *= beta;
    for (k = 0; k < m; k++) {
      for (j = 0; j <= i; j++)
        C[i][j] += alpha * A[i][k] * A[j][k];
    }
  }
#pragma endscop
}

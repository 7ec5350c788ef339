/* syr2k: symmetric rank-2k update on the lower triangle of C.
 * C = alpha * A * B^T + alpha * B * A^T + beta * C (for j <= i only). */

void kernel_syr2k(int n, int m, double alpha, double beta, double C[n][n],
                  double A[n][m], double B[n][m])
{
  int i, j, k;

#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j <= i; j++)
      C[i][j] *= beta;
    for (k = 0; k < m; k++)
      for (j = 0; j <= i; j++) {
        C[i][j] += A[j][k] * alpha * B[i][k] + B[j][k] * alpha * A[i][k];
      }
  }
#pragma endscop
}

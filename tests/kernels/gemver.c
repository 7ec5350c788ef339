/* gemver: vector multiplication and matrix addition.
 * A += u1 v1^T + u2 v2^T; x += beta A^T y + z; w += alpha A x. */

void kernel_gemver(int n, double alpha, double beta, double A[n][n],
                   double u1[n], double v1[n], double u2[n], double v2[n],
                   double w[n], double x[n], double y[n], double z[n])
{
  int i, j;

#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      A[i][j] = A[i][j] + u1[i] * v1[j] + u2[i] * v2[j];

  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      x[i] = x[i] + beta * A[j][i] * y[j];

  for (i = 0; i < n; i++)
    x[i] = x[i] + z[i];

  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      w[i] = w[i] + alpha * A[i][j] * x[j];
#pragma endscop
}

/* lu: in-place LU decomposition without pivoting, A = L * U.
 * The strict lower triangle of A becomes L (unit diagonal implied) and the
 * upper triangle becomes U. */

void kernel_lu(int n, double A[n][n])
{
  int i, j, k;

#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j < i; j++) {
      for (k = 0; k < j; k++) {
        A[i][j] -= A[i][k] * A[k][j];
      }
      A[i][j] /= A[j][j];
    }
    for (j = i; j < n; j++) {
      for (k = 0; k < i; k++) {
        A[i][j] -= A[i][k] * A[k][j];
      }
    }
  }
#pragma endscop
}

/* trisolv: forward substitution, L x = b with L lower triangular. */
void trisolv(int n, double L[n][n], double b[n], double x[n])
{
  for (int i = 0; i < n; i++) {
    double s = b[i];
    for (int j = 0; j < i; j++)
      s -= L[i][j] * x[j];
    x[i] = s / L[i][i];
  }
}

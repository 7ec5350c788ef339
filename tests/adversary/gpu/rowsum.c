/* rowsum: s[i] = sum over j of A[i][j] (the GPU adversaries' reduction reference). */
void rowsum(int n, int m, double A[n][m], double s[n])
{
  for (int i = 0; i < n; i++) {
    s[i] = 0.0;
    for (int j = 0; j < m; j++)
      s[i] += A[i][j];
  }
}

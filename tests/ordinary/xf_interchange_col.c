// xf_interchange_col: transform
// expect: parallel i

void xf_interchange_col(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++)
      a[i][j] = b[i][j] * 2.0f;
}

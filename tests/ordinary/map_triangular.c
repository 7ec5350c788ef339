// map_triangular: basic
// expect: parallel i

void map_triangular(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j <= i; j++)
      a[i][j] = b[i][j] * c[j][i];
}

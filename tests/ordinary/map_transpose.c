// map_transpose: basic
// expect: parallel i

void map_transpose(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      a[i][j] = b[j][i];
}

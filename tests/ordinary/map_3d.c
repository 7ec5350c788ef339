// map_3d: basic
// expect: parallel i

void map_3d(int n, float a[n][n][n], float b[n][n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      for (int k = 0; k < n; k++)
        a[i][j][k] = 2.0f * b[i][j][k];
}

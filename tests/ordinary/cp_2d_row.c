// cp_2d_row: propagation
// expect: parallel i

void cp_2d_row(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i++) {
    int r = i;
    for (int j = 0; j < n; j++)
      a[r][j] = b[r][j] + c[j][r];
  }
}

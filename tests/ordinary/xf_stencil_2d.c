// xf_stencil_2d: transform
// expect: parallel i

void xf_stencil_2d(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 1; i < n - 1; i++)
    for (int j = 1; j < n - 1; j++)
      a[i][j] = 0.2f * (b[i][j] + b[i - 1][j] + b[i + 1][j] + b[i][j - 1] + b[i][j + 1]);
}

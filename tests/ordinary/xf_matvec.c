// xf_matvec: transform
// expect: parallel i

void xf_matvec(int n, float a[n][n], float x[n], float y[n]) {
  for (int i = 0; i < n; i++) {
    y[i] = 0.0f;
    for (int j = 0; j < n; j++)
      y[i] += a[i][j] * x[j];
  }
}

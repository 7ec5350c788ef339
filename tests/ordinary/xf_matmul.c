// xf_matmul: transform
// expect: parallel i

void xf_matmul(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      a[i][j] = 0.0f;
      for (int k = 0; k < n; k++)
        a[i][j] += b[i][k] * c[k][j];
    }
}

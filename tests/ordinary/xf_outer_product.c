// xf_outer_product: transform
// expect: parallel i

void xf_outer_product(int n, float a[n][n], float x[n], float y[n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      a[i][j] += x[i] * y[j];
}

// xf_triangular_update: transform
// expect: parallel j

void xf_triangular_update(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int k = 0; k < n; k++)
    for (int j = k + 1; j < n; j++)
      a[k][j] = a[k][j] / a[k][k];
}

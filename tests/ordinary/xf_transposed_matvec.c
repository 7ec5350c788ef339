// xf_transposed_matvec: transform
// expect: parallel j

void xf_transposed_matvec(int n, float a[n][n], float x[n], float y[n]) {
  for (int j = 0; j < n; j++)
    y[j] = 0.0f;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      y[j] += a[i][j] * x[i];
}

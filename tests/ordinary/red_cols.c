// red_cols: reduction
// expect: parallel j

void red_cols(int n, float a[n][n], float r[n]) {
  for (int j = 0; j < n; j++)
    r[j] = 0.0f;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      r[j] += a[i][j];
}

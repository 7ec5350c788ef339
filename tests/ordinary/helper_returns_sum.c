// helper_returns_sum: helper
// expect: parallel i

static float row_sum(int m, float *row) {
  float s = 0.0f;
  for (int j = 0; j < m; j++)
    s += row[j];
  return s;
}

void helper_returns_sum(int n, float a[n][n], float r[n]) {
  for (int i = 0; i < n; i++)
    r[i] = row_sum(n, a[i]);
}

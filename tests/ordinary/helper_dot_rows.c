// helper_dot_rows: helper
// expect: parallel i

static float dot_h(int m, const float *x, const float *y) {
  float s = 0.0f;
  for (int k = 0; k < m; k++)
    s += x[k] * y[k];
  return s;
}

void helper_dot_rows(int n, float a[n][n], float v[n], float r[n]) {
  for (int i = 0; i < n; i++)
    r[i] = dot_h(n, a[i], v);
}

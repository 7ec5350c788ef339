// helper_nested_calls: helper
// expect: parallel k

static void fill_h(int m, float *x, float v) {
  for (int k = 0; k < m; k++)
    x[k] = v;
}

static void twice_h(int m, float *x, float *y) {
  fill_h(m, x, 1.0f);
  for (int k = 0; k < m; k++)
    y[k] = 2.0f * x[k];
}

void helper_nested_calls(int n, float a[n], float b[n]) {
  twice_h(n, a, b);
}

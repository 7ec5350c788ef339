// helper_recursive: helper
// expect: error: recursive call

static void rec_h(int m, float *x) {
  for (int k = 0; k < m; k++)
    x[k] += 1.0f;
  if (m > 1)
    rec_h(m - 1, x);
}

void helper_recursive(int n, float a[n]) {
  rec_h(n, a);
}

// helper_axpy: helper
// expect: parallel i

static void axpy_h(int m, float s, float *x, float *y) {
  for (int i = 0; i < m; i++)
    y[i] += s * x[i];
}

void helper_axpy(int n, float a[n], float b[n]) {
  axpy_h(n, 2.0f, b, a);
}

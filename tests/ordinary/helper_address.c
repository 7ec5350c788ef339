// helper_address: helper
// expect: parallel i

static void add_at(int m, float *dst, float *src) {
  for (int i = 0; i < m; i++)
    dst[i] += src[i];
}

void helper_address(int n, float a[n], float b[n]) {
  add_at(n / 2, &a[n / 2], b);
}

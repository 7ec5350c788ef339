// xf_pointer_params: basic
// expect: parallel i

void xf_pointer_params(int n, float *a, float *b, float *c) {
  for (int i = 0; i < n; i++)
    a[i] = b[i] + c[i];
}

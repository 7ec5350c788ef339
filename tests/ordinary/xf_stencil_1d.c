// xf_stencil_1d: transform
// expect: parallel i

void xf_stencil_1d(int n, float a[n], float b[n], float c[n]) {
  for (int i = 1; i < n - 1; i++)
    a[i] = 0.25f * (b[i - 1] + 2.0f * b[i] + b[i + 1]);
}

// xf_scalar_expand: transform
// expect: parallel i

void xf_scalar_expand(int n, float a[n], float b[n], float c[n]) {
  float t;
  for (int i = 0; i < n; i++) {
    t = a[i];
    a[i] = b[i];
    b[i] = t;
  }
}

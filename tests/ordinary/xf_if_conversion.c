// xf_if_conversion: transform
// expect: parallel i

void xf_if_conversion(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    if (a[i] < 0.0f)
      a[i] = 0.0f;
    b[i] = a[i] + c[i];
  }
}

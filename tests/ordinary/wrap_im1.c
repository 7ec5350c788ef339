// wrap_im1: wraparound
// expect: parallel i

void wrap_im1(int n, float a[n], float b[n], float c[n]) {
  int im1 = n - 1;
  for (int i = 0; i < n; i++) {
    a[i] = b[i] + b[im1];
    im1 = i;
  }
}

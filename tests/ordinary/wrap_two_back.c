// wrap_two_back: wraparound
// expect: parallel i

void wrap_two_back(int n, float a[n], float b[n], float c[n]) {
  int im1 = 1, im2 = 0;
  for (int i = 2; i < n; i++) {
    a[i] = b[im1] + b[im2];
    im2 = im1;
    im1 = i;
  }
}

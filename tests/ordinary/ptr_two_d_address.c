// ptr_two_d_address: pointer
// expect: parallel i

void ptr_two_d_address(int n, float a[n][n], float b[n][n]) {
  for (int i = 0; i < n; i++) {
    float *dst = &a[i][1];
    const float *src = b[i];
    for (int j = 0; j < n - 1; j++)
      dst[j] = src[j] + src[j + 1];
  }
}

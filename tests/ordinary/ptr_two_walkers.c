// ptr_two_walkers: pointer
// expect: parallel i

void ptr_two_walkers(int n, float a[2 * n], float b[n]) {
  float *lo = a;
  float *hi = a + n;
  for (int i = 0; i < n; i++) {
    *lo++ = b[i];
    *hi++ = -b[i];
  }
}

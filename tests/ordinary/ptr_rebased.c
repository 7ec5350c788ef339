// ptr_rebased: pointer
// expect: error: set to point into another array

void ptr_rebased(int n, float a[n], float b[n], float c[n]) {
  float *p = a;
  for (int i = 0; i < n; i++) {
    if (i == n / 2)
      p = b;
    p[i] = c[i];
  }
}

// ptr_compared: pointer
// expect: error: other than through

void ptr_compared(int n, float a[n], float b[n]) {
  float *p = a;
  float *end = a + n;
  for (int i = 0; i < n; i++) {
    if (p < end)
      *p = b[i];
    p++;
  }
}

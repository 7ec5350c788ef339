// ptr_backward: pointer
// expect: parallel i

void ptr_backward(int n, float a[n], float b[n]) {
  float *p = &a[n - 1];
  for (int i = 0; i < n; i++) {
    *p = b[i];
    p--;
  }
}

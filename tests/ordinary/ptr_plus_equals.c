// ptr_plus_equals: pointer
// expect: parallel i

void ptr_plus_equals(int n, float a[n], float b[2 * n]) {
  float *q = b;
  for (int i = 0; i < n; i++) {
    a[i] = q[0] + q[1];
    q += 2;
  }
}

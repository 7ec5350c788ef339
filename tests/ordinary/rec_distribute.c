// rec_distribute: recurrence
// expect: parallel i

void rec_distribute(int n, float a[n], float b[n], float c[n]) {
  for (int i = 1; i < n; i++) {
    a[i] = a[i - 1] + b[i];
    c[i] = b[i] * 2.0f;
  }
}

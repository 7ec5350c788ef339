// ERROR: 5:7: 'return' inside a loop is not supported
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) {
    if (A[i] < 0)
      return;
    A[i] = 1;
  }
}

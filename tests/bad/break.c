// ERROR: 5:7: 'break' statement is not supported
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) {
    if (A[i] < 0)
      break;
    A[i] = 1;
  }
}

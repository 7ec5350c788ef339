// ERROR: 4:19: 'continue' statement is not supported
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) {
    if (i == 2) { continue; }
    A[i] = 1;
  }
}

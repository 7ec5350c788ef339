// ERROR: 5:7: 'goto again' jumps backward
void f(int n, double A[n]) {
again:
  for (int i = 0; i < n; i++) {
      goto again;
  }
}

// ERROR: 5:5: 'm' is written in the body of a loop whose bounds read it
void f(int n, double A[n]) {
  int m = n;
  for (int i = 0; i < m; i++) {
    m = m - 1;
    A[i] = m;
  }
}

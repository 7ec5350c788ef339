// ERROR: 3:10: local pointer 'q' without an initial value is not supported
void f(int n, double A[n]) {
  double *q;
  q = A;
  for (int i = 0; i < n; i++) q[i] = 0;
}

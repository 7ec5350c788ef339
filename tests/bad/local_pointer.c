// ERROR: 3:11: local pointer 'q' is not supported
void f(int n, double A[n]) {
  double *q = A;
  for (int i = 0; i < n; i++) q[i] = 0;
}

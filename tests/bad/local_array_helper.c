// ERROR: 3:10: local array 't' in a helper function is not supported
static double g(double x) {
  double t[2];
  t[0] = x;
  t[1] = t[0] * 2.0;
  return t[1];
}

void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = g(A[i]);
}

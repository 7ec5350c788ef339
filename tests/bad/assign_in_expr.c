// ERROR: 5:13: assignment used as a value is not supported
void f(int n, double A[n]) {
  double t;
  for (int i = 0; i < n; i++)
    A[i] = (t = 2.0) + 1.0;
}

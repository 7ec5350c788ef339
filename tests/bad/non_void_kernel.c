// ERROR: 2:8: kernel 'total' returns double, which is not supported
double total(int n, double A[n]) {
  double s = 0;
  for (int i = 0; i < n; i++) s += A[i];
  return s;
}

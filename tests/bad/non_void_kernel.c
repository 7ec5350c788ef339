// ERROR: 5:3: a kernel returning double must end with 'return value;'
double total(int n, double A[n]) {
  double s = 0;
  for (int i = 0; i < n; i++) s += A[i];
  A[0] = s;
}

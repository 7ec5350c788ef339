// ERROR: 11:12: passing a multi-dimensional array to helper 'sum' is not supported
static double sum(int n, double v[n][n]) {
  double s = 0;
  for (int i = 0; i < n; i++) s += v[i][i];
  return s;
}

void f(int n, double A[n][n], double out[1]) {
#pragma scop
  for (int i = 0; i < n; i++) A[i][i] = i;
  out[0] = sum(n, A);
#pragma endscop
}

// ERROR: 2:24: function pointer parameter 'op' is not supported
void f(int n, double (*op)(double), double A[n]) {
  for (int i = 0; i < n; i++) A[i] = op(A[i]);
}

// ERROR: 2:24: pointer-to-pointer parameter 'A' is not supported
void f(int n, double **A) {
  for (int i = 0; i < n; i++) A[i][i] = 0;
}

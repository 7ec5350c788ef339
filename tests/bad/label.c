// ERROR: 4:1: labels are not supported
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) A[i] = 0;
again:
  A[0] = 1;
}

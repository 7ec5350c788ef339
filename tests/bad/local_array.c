// ERROR: 4:12: local array 'tmp' is only supported at the top level of a kernel body
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) {
    double tmp[4];
    tmp[0] = A[i];
    A[i] = tmp[0];
  }
}

// ERROR: 5:12: local array 'tmp' is declared in a loop or an if with an extent over 'n', which the kernel assigns
void f(int n, double A[n]) {
  n = n - 1;
  for (int i = 0; i < n; i++) {
    double tmp[n];
    tmp[0] = A[i];
    A[i] = tmp[0];
  }
}

// ERROR: 4:13: dereferencing a pointer ('*') is not supported
void f(int n, double B[n][n], double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = *B[i];
}

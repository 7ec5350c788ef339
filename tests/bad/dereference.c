// ERROR: 4:13: dereferencing a pointer ('*') is not supported
void f(int n, double *p, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = *p;
}

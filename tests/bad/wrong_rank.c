// ERROR: 4:5: 2-dimensional array 'A' indexed with 1 subscript(s)
void f(int n, double A[n][n]) {
  for (int i = 0; i < n; i++)
    A[i] = 0;
}

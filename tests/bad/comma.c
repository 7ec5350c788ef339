// ERROR: 4:8: comma expressions are not supported
void f(int n, double A[n]) {
  int i, j;
  for (i = 0, j = 1; i < n; i++)
    A[i] = j;
}

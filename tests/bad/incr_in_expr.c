// ERROR: 5:12: '++' inside an expression is not supported
void f(int n, double A[n]) {
  int k = 0;
  for (int i = 0; i < n; i++)
    A[i] = k++;
}

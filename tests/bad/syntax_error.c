// ERROR: 4:21: syntax error before 'A'
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = A[i] + 1 A[i];
}

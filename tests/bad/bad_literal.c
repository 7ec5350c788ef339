// ERROR: 4:15: syntax error
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = 10uu;
}

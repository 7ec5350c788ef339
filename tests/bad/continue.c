// ERROR: 3:17: 'continue' statement is not supported
void f(int n, double A[n]) {
  if (n == 2) { continue; }
  for (int i = 0; i < n; i++)
    A[i] = 1;
}

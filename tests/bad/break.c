// ERROR: 4:5: 'break' statement is not supported
void f(int n, double A[n]) {
  if (n > 2)
    break;
  for (int i = 0; i < n; i++)
    A[i] = 1;
}

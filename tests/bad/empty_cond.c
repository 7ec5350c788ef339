// ERROR: 3:3: 'for' loop without a condition is not supported
void f(int n, double A[n]) {
  for (int i = 0; ; i++)
    A[i] = 0;
}

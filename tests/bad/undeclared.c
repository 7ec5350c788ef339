// ERROR: 4:12: 'beta' undeclared
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = beta;
}

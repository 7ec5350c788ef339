// ERROR: 3:31: a run-time step must be a signed integer
void f(int n, unsigned s, double A[n]) {
  for (int i = 0; i < n; i += s)
    A[i] = 0;
}

// ERROR: 3:31: non-constant loop step is not supported
void f(int n, int s, double A[n]) {
  for (int i = 0; i < n; i += s)
    A[i] = 0;
}

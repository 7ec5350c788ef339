// ERROR: 4:12: string literals are not supported
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = "abc"[i % 3];
}

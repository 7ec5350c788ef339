// ERROR: 5:7: 'goto' statement is not supported
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++) {
    if (A[i] < 0)
      goto done;
    A[i] = 1;
  }
done:
  return;
}

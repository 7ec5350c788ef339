// ERROR: 3:27: recursive call to 'fact' is not supported
static int fact(int x) {
  return x <= 1 ? 1 : x * fact(x - 1);
}

void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = fact(i);
}

// ERROR: 6:12: call to variadic function 'pick' is not supported
static double pick(int k, ...) { return 0.0; }

void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = pick(1, 2.0);
}

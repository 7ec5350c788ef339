// ERROR: 4:23: recursive call to 'even' is not supported
static int even(int x);
static int odd(int x) {
  return x == 0 ? 0 : even(x - 1);
}
static int even(int x) {
  return x == 0 ? 1 : odd(x - 1);
}

void f(int n, int A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = even(i);
}

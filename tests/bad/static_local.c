// ERROR: 3:14: static local variable 'calls' is not supported
void f(int n, double A[n]) {
  static int calls = 0;
  for (int i = 0; i < n; i++) A[i] = calls;
}

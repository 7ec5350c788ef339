// ERROR: 5:14: taking an address
void f(int n, double A[n]) {
  double t = 1.0;
  for (int i = 0; i < n; i++)
    A[i] = (&t)[0];
}

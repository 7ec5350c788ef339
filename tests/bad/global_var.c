// ERROR: 6:12: global variable 'scale' is not supported
double scale = 2.0;

void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = scale * i;
}

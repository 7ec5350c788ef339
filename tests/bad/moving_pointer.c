// ERROR: 5:5: pointer parameter 'p' is modified
void f(int n, double *p) {
  for (int i = 0; i < n; i++) {
    p[0] = 0.0;
    p++;
  }
}

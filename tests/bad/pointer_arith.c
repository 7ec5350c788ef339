// ERROR: 5:18: pointer 'p' used as a value is not supported
static double first(double x) { return x; }

void f(int n, double *p, double out[n]) {
  out[0] = first(p + 1);
  for (int i = 0; i < n; i++) out[i] = p[i];
}

// ERROR: 6:10: struct member access is not supported
struct point { double x, y; };
static const struct point origin = {0.0, 0.0};

void f(int n, double A[n]) {
  A[0] = origin.x;
  for (int i = 0; i < n; i++) A[i] = 0;
}

// ERROR: 4:28: struct parameter 'pt' of type 'struct point' is not supported
struct point { double x, y; };

void f(int n, struct point pt, double A[n]) {
  for (int i = 0; i < n; i++) A[i] = 0;
}

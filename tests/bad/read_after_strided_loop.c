// ERROR: 4:3: 'i' is read after this loop, which counts it with a step known only at run time
void f(int n, int inc, double A[n]) {
  int i;
  for (i = 0; i < n; i += inc)
    A[i] = 0;
  A[0] = i;
}

// ERROR: 6:10: 'i' is read after the loop it counts has ended
void f(int n, double A[n]) {
  int i;
  for (i = 0; i < n; i++)
    A[i] = 0;
  A[0] = i;
}

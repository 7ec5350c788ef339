// ERROR: 4:5: comma expressions are not supported
void f(int n, double A[n], double B[n]) {
  for (int i = 0; i < n; i++)
    A[i] = 1,
    B[i] = 2;
}

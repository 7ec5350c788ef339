// ERROR: 4:12: operator '%' needs integer operands
void f(int n, double A[n]) {
  for (int i = 0; i < n; i++)
    A[i] = A[i] % 2;
}

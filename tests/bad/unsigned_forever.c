// ERROR: 3:28: loop condition 'i >= 0' is always true for unsigned 'i'
void f(unsigned n, double A[n]) {
  for (unsigned i = n - 1; i >= 0; i--)
    A[i] = 0;
}

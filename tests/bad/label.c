// ERROR: 3:3: 'goto inside' jumps backward or into a block
void f(int n, double A[n]) {
  goto inside;
  for (int i = 0; i < n; i++) {
  inside:
    A[i] = 0;
  }
}

// iv_k_plus_two: induction
// expect: parallel i

void iv_k_plus_two(int n, float a[n], float b[2 * n]) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    a[i] = b[k] + b[k + 1];
    k += 2;
  }
}

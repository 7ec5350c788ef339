// iv_two_ivs: induction
// expect: parallel i

void iv_two_ivs(int n, float a[n], float b[n], float c[3 * n]) {
  int j = 0, k = 0;
  for (int i = 0; i < n; i++) {
    a[i] = b[j] + c[k];
    j += 1;
    k += 3;
  }
}

// iv_j_plus_plus: induction
// expect: parallel i

void iv_j_plus_plus(int n, float a[n], float b[n], float c[n]) {
  int j = 0;
  for (int i = 0; i < n; i++) {
    a[j] = b[i] + c[i];
    j++;
  }
}

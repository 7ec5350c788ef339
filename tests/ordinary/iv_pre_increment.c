// iv_pre_increment: induction
// expect: parallel i

void iv_pre_increment(int n, float a[n + 1], float b[n]) {
  int j = 0;
  for (int i = 0; i < n; i++) {
    j++;
    a[j] = b[i];
  }
}

// iv_from_end: induction
// expect: parallel i

void iv_from_end(int n, float a[n], float b[n], float c[n]) {
  int j = n - 1;
  for (int i = 0; i < n; i++) {
    a[i] = b[j];
    j--;
  }
}

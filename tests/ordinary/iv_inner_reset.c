// iv_inner_reset: induction
// expect: parallel i

void iv_inner_reset(int n, float a[n][n], float b[n * n]) {
  for (int i = 0; i < n; i++) {
    int k = i * n;
    for (int j = 0; j < n; j++) {
      a[i][j] = b[k];
      k++;
    }
  }
}

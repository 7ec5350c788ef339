// iv_nest_running: induction
// expect: parallel i

void iv_nest_running(int n, float a[n * n], float b[n][n]) {
  int k = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      a[k] = b[i][j];
      k++;
    }
}

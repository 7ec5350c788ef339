// iv_step_param: induction
// expect: parallel i

void iv_step_param(int n, int s, float a[n], float b[n * 4 + 4]) {
  int k = 0;
  for (int i = 0; i < n; i++) {
    a[i] = b[k];
    k += s;
  }
}

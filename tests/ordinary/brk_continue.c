// brk_continue: break
// expect: parallel i

void brk_continue(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    if (b[i] == 0.0f)
      continue;
    a[i] = c[i] / b[i];
  }
}

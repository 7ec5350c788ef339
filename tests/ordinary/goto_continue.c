// goto_continue: goto
// expect: parallel i

void goto_continue(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    if (b[i] < 0.0f)
      goto next;
    a[i] = b[i] * c[i];
  next:;
  }
}

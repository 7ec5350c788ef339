// goto_if_else: goto
// expect: parallel i

void goto_if_else(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    if (b[i] > c[i])
      goto big;
    a[i] = c[i];
    goto done;
  big:
    a[i] = b[i];
  done:;
  }
}

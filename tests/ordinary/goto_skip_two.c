// goto_skip_two: goto
// expect: parallel i

void goto_skip_two(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    a[i] = b[i];
    if (c[i] == 0.0f)
      goto end;
    a[i] = a[i] / c[i];
    b[i] = 0.0f;
  end:
    ;
  }
}

// goto_top_level_skip: goto
// expect: parallel i

void goto_top_level_skip(int n, int flag, float a[n], float b[n]) {
  if (flag)
    goto skip;
  for (int i = 0; i < n; i++)
    a[i] = b[i];
skip:
  return;
}

// goto_skip_inner_rows: goto
// expect: parallel i

void goto_skip_inner_rows(int n, float a[n][n], float r[n]) {
  for (int i = 0; i < n; i++) {
    r[i] = 0.0f;
    if (a[i][0] == 0.0f)
      goto next_row;
    for (int j = 0; j < n; j++)
      r[i] += a[i][j] * a[i][j];
  next_row:;
  }
}

// goto_nested_loop: goto
// expect: parallel i

void goto_nested_loop(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (b[i][j] == 0.0f)
        goto skip;
      a[i][j] = c[i][j] / b[i][j];
    skip:;
    }
}

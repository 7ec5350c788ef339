// brk_continue_nested: break
// expect: parallel i

void brk_continue_nested(int n, float a[n][n], float b[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (i == j)
        continue;
      b[i][j] = a[i][j] - a[j][i];
    }
}

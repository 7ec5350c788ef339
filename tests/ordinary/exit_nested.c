// exit_nested: an inner strided loop's exit value, read in each row (private to the row)
// expect: parallel j

void exit_nested(int n, int m, float a[n][m], int last[n]) {
  for (int j = 0; j < n; j++) {
    int i;
    for (i = j % 2; i < m; i += 2)
      a[j][i] = (float)(i + j);
    last[j] = i;
  }
}

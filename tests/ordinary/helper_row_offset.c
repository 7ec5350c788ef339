// helper_row_offset: helper
// expect: parallel i

static void scale_row(int m, float *row, float s) {
  for (int j = 0; j < m; j++)
    row[j] = row[j] * s;
}

void helper_row_offset(int n, float a[n][n], float b[n]) {
  for (int i = 0; i < n; i++)
    scale_row(n, a[i], b[i]);
}

// rec_cols_parallel: recurrence
// expect: parallel j

void rec_cols_parallel(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 1; i < n; i++)
    for (int j = 0; j < n; j++)
      a[i][j] = a[i - 1][j] * 0.5f + b[i][j];
}

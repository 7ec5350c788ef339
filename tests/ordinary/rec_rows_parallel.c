// rec_rows_parallel: recurrence
// expect: parallel i

void rec_rows_parallel(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 1; j < n; j++)
      a[i][j] = a[i][j - 1] + b[i][j];
}

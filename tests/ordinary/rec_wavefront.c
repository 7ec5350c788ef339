// rec_wavefront: recurrence
// expect: parallel i

void rec_wavefront(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 1; i < n; i++)
    for (int j = 1; j < n; j++)
      a[i][j] = a[i - 1][j] + a[i][j - 1];
}

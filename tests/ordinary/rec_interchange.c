// rec_interchange: recurrence
// expect: parallel i

void rec_interchange(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int j = 1; j < n; j++)
    for (int i = 0; i < n; i++)
      a[i][j] = a[i][j - 1] + b[i][j];
}

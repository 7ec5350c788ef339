// rec_triangular_solve: recurrence
// expect: parallel i

void rec_triangular_solve(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < i; j++)
      a[i][0] -= b[i][j] * a[j][0];
  }
}

// ptr_row: pointer
// expect: parallel i

void ptr_row(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i++) {
    float *row = a[i];
    for (int j = 0; j < n; j++)
      row[j] = b[i][j] + c[i][j];
  }
}

// red_int_max_rows: the largest element of each row, kept in an element of the result (nussinov's update shape)
// expect: reduction

void red_int_max_rows(int n, int m, int a[n][m], int best[n]) {
  for (int i = 0; i < n; i++) {
    best[i] = a[i][0];
    for (int j = 1; j < m; j++)
      best[i] = best[i] >= a[i][j] ? best[i] : a[i][j];
  }
}

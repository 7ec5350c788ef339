// brk_first_negative_per_row: break
// expect: parallel i

void brk_first_negative_per_row(int n, float a[n][n], int pos[n]) {
  for (int i = 0; i < n; i++) {
    pos[i] = -1;
    for (int j = 0; j < n; j++)
      if (a[i][j] < 0.0f) {
        pos[i] = j;
        break;
      }
  }
}

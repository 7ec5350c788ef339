// red_rows: reduction
// expect: parallel i

void red_rows(int n, float a[n][n], float r[n]) {
  for (int i = 0; i < n; i++) {
    float s = 0.0f;
    for (int j = 0; j < n; j++)
      s += a[i][j];
    r[i] = s;
  }
}

// red_2d_total: reduction
// expect: reduction

void red_2d_total(int n, float a[n][n], float out[1]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      s += a[i][j];
  out[0] = s;
}

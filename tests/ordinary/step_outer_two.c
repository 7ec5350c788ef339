// step_outer_two: stride
// expect: parallel i

void step_outer_two(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i += 2)
    for (int j = 0; j < n; j++)
      a[i][j] = b[j][i];
}

// step_inner_two: stride
// expect: parallel i

void step_inner_two(int n, float a[n][n], float b[n][n], float c[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j += 2)
      a[i][j] = b[i][j] + c[i][j];
}

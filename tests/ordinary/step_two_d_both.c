// step_two_d_both: stride
// expect: parallel i

void step_two_d_both(int n, float a[n][n], float b[n][n]) {
  for (int i = n - 1; i >= 0; i -= 2)
    for (int j = 0; j < n; j += 3)
      a[i][j] = b[i][j] * 0.5f;
}

// step_runtime_nest: stride
// expect: parallel i

void step_runtime_nest(int n, int t, float A[n][n], float B[n][n]) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j += t)
      A[i][j] = A[i][j] * B[j][i];
}

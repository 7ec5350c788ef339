// step_runtime_triangle: stride
// expect: parallel j

void step_runtime_triangle(int n, int inc, float A[n][n]) {
  for (int j = 0; j < n; j++)
    for (int i = j; i < n; i += inc)
      A[j][i] = A[j][i] * 0.5f;
}

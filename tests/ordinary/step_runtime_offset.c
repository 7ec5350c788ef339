// step_runtime_offset: stride
// expect: parallel i

void step_runtime_offset(int n, int incx, float x[n], float y[n]) {
  for (int i = 1; i <= n - 1; i += incx)
    y[i] = y[i] + 2.0f * x[i];
}

// step_runtime_neg_up: stride
// expect: parallel i

void step_runtime_neg_up(int n, int dec, float x[n], float y[n]) {
  for (int i = 1; i < n; i -= dec)
    y[i] = y[i] - x[i];
}

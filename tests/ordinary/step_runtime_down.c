// step_runtime_down: stride
// expect: parallel i

void step_runtime_down(int n, int inc, float a[n], float b[n]) {
  for (int i = n - 1; i >= 0; i -= inc)
    a[i] = b[i] + 1.0f;
}

// step_runtime_inc: stride
// expect: parallel i

void step_runtime_inc(int n, int inc, float a[n], float b[n]) {
  for (int i = 0; i < n; i += inc)
    a[i] = b[i] * 2.0f;
}

// step_runtime_ne: stride
// expect: error: with a step known only at run time is not supported

void step_runtime_ne(int n, int inc, float a[n]) {
  for (int i = 0; i != n; i += inc)
    a[i] = 0.0f;
}

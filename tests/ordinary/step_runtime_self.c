// step_runtime_self: stride
// expect: error: loop step reads the loop variable

void step_runtime_self(int n, float a[n]) {
  for (int i = 1; i < n; i += i)
    a[i] = 0.0f;
}

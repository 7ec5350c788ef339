// step_runtime_recurrence: stride
// expect: sequential

void step_runtime_recurrence(int n, int inc, float a[n], float b[n]) {
  for (int i = inc; i < n; i += inc)
    a[i] = a[i - inc] + b[i];
}

// step_two_recurrence: stride
// expect: sequential

void step_two_recurrence(int n, float a[n], float b[n], float c[n]) {
  for (int i = 2; i < n; i += 2)
    a[i] = a[i - 2] + b[i];
}

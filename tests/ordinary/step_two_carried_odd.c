// step_two_carried_odd: stride
// expect: parallel i

void step_two_carried_odd(int n, float a[n], float b[n], float c[n]) {
  for (int i = 1; i < n; i += 2)
    a[i] = a[i - 1] * b[i];
}

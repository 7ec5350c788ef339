// step_two_up: stride
// expect: parallel i

void step_two_up(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i += 2)
    a[i] = b[i] + c[i];
}

// step_two_down: stride
// expect: parallel i

void step_two_down(int n, float a[n], float b[n], float c[n]) {
  for (int i = n - 1; i >= 0; i -= 2)
    a[i] = b[i] * c[i];
}

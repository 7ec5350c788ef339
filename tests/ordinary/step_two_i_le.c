// step_two_i_le: stride
// expect: parallel i

void step_two_i_le(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i <= n - 1; i = i + 2)
    a[i] = 3.0f * b[i];
}

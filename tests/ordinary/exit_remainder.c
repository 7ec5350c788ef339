// exit_remainder: a loop unrolled by four, then its remainder loop counting on from the exit value
// expect: parallel i_1

void exit_remainder(int n, float a[n], const float b[n]) {
  int i;
  for (i = 0; i + 4 <= n; i += 4) {
    a[i] = 2.0f * b[i];
    a[i + 1] = 2.0f * b[i + 1];
    a[i + 2] = 2.0f * b[i + 2];
    a[i + 3] = 2.0f * b[i + 3];
  }
  for (; i < n; i++)
    a[i] = 2.0f * b[i];
}

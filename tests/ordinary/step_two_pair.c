// step_two_pair: stride
// expect: parallel i

void step_two_pair(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i + 1 < n; i += 2) {
    a[i] = b[i + 1];
    a[i + 1] = b[i];
  }
}

// step_four_unrolled: stride
// expect: parallel i

void step_four_unrolled(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i + 3 < n; i += 4) {
    a[i] = b[i] * c[i];
    a[i + 1] = b[i + 1] * c[i + 1];
    a[i + 2] = b[i + 2] * c[i + 2];
    a[i + 3] = b[i + 3] * c[i + 3];
  }
}

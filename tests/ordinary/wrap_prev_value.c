// wrap_prev_value: wraparound
// expect: parallel i

void wrap_prev_value(int n, float a[n], float b[n], float c[n]) {
  float prev = 0.0f;
  for (int i = 0; i < n; i++) {
    a[i] = b[i] - prev;
    prev = b[i];
  }
}

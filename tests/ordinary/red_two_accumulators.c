// red_two_accumulators: reduction
// expect: reduction

void red_two_accumulators(int n, float a[n], float b[n], float out[2]) {
  float s = 0.0f, t = 0.0f;
  for (int i = 0; i < n; i++) {
    s += a[i];
    t += b[i] * b[i];
  }
  out[0] = s;
  out[1] = t;
}

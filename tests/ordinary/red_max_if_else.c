// red_max_if_else: reduction
// expect: reduction

void red_max_if_else(int n, float a[n], float out[1]) {
  float m = a[0];
  for (int i = 1; i < n; i++) {
    if (m < a[i])
      m = a[i];
  }
  out[0] = m;
}

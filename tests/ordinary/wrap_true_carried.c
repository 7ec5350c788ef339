// wrap_true_carried: wraparound
// expect: sequential

void wrap_true_carried(int n, float a[n], float b[n], float c[n]) {
  float t = 0.0f;
  for (int i = 0; i < n; i++) {
    a[i] = t;
    t = a[i] + b[i];
  }
}

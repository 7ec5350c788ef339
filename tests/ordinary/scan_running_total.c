// scan_running_total: a running total written out at every step and returned
// expect: scan

float scan_running_total(int n, const float x[n], float y[n]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++) {
    s += x[i];
    y[i] = s;
  }
  return s;
}

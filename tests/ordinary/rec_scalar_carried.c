// rec_scalar_carried: recurrence
// expect: scan

void rec_scalar_carried(int n, float a[n], float b[n], float c[n]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++) {
    s = s * 0.5f + b[i];
    a[i] = s;
  }
}

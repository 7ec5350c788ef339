// red_via_temp: reduction
// expect: reduction

void red_via_temp(int n, float a[n], float b[n], float out[1]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++) {
    float t = a[i] * b[i];
    s = s + t;
  }
  out[0] = s;
}

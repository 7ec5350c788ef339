// map_outer_temp: basic
// expect: parallel i

void map_outer_temp(int n, float a[n], float b[n], float c[n]) {
  float t;
  for (int i = 0; i < n; i++) {
    t = b[i] * c[i];
    a[i] = t + 1.0f;
  }
}

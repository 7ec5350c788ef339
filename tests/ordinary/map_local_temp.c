// map_local_temp: basic
// expect: parallel i

void map_local_temp(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    float t = b[i] + c[i];
    a[i] = t * t;
  }
}

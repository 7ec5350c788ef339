// map_cond: basic
// expect: parallel i

void map_cond(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    if (b[i] > 0.0f)
      a[i] = b[i] * c[i];
    else
      a[i] = -b[i];
  }
}

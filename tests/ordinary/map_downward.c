// map_downward: basic
// expect: parallel i

void map_downward(int n, float a[n], float b[n], float c[n]) {
  for (int i = n - 1; i >= 0; i--)
    a[i] = b[i] - c[i];
}

// map_copy: basic
// expect: parallel i

void map_copy(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++)
    a[i] = b[i];
}

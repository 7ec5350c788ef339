// map_offset_write: basic
// expect: parallel i

void map_offset_write(int n, float a[n], float b[n], float c[n]) {
  for (int i = 1; i < n; i++)
    a[i] = b[i - 1] + c[i];
}

// map_reverse_read: basic
// expect: parallel i

void map_reverse_read(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++)
    a[i] = b[n - 1 - i] + c[i];
}

// map_int_index: basic
// expect: parallel i

void map_int_index(int n, float a[n], float b[n], int idx[n]) {
  for (int i = 0; i < n; i++)
    a[i] = b[idx[i]];
}

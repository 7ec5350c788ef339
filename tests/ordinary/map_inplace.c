// map_inplace: basic
// expect: parallel i

void map_inplace(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++)
    a[i] = a[i] * b[i] + c[i];
}

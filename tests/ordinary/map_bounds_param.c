// map_bounds_param: basic
// expect: parallel i

void map_bounds_param(int n, int lo, int hi, float a[n], float b[n]) {
  for (int i = lo; i < hi && i < n; i++)
    a[i] = b[i];
}

// red_int_max_if: an integer maximum by comparison (exact: no NaN, so any association is C's result)
// expect: reduction

void red_int_max_if(int n, int a[n], int out[1]) {
  int m = a[0];
  for (int i = 1; i < n; i++)
    if (a[i] > m)
      m = a[i];
  out[0] = m;
}

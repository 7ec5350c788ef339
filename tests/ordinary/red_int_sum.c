// red_int_sum: reduction
// expect: reduction

void red_int_sum(int n, int a[n], int out[1]) {
  int s = 0;
  for (int i = 0; i < n; i++)
    s += a[i];
  out[0] = s;
}

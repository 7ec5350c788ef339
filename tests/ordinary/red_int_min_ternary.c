// red_int_min_ternary: an integer minimum written as a conditional, the accumulator on the right
// expect: reduction

void red_int_min_ternary(int n, long a[n], long out[1]) {
  long m = a[0];
  for (int i = 1; i < n; i++)
    m = a[i] < m ? a[i] : m;
  out[0] = m;
}

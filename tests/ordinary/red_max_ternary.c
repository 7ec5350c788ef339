// red_max_ternary: reduction
// expect: reduction

void red_max_ternary(int n, float a[n], float out[1]) {
  float m = a[0];
  for (int i = 1; i < n; i++)
    m = a[i] > m ? a[i] : m;
  out[0] = m;
}

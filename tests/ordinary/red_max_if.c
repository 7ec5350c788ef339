// red_max_if: reduction
// expect: reduction

void red_max_if(int n, float a[n], float out[1]) {
  float m = a[0];
  for (int i = 1; i < n; i++)
    if (a[i] > m)
      m = a[i];
  out[0] = m;
}

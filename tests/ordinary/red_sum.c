// red_sum: reduction
// expect: reduction

void red_sum(int n, float a[n], float out[1]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    s += a[i];
  out[0] = s;
}

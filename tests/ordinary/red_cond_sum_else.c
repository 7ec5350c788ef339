// red_cond_sum_else: reduction
// expect: reduction

void red_cond_sum_else(int n, float a[n], float b[n], float out[1]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++) {
    if (a[i] > b[i])
      s += a[i];
    else
      s += b[i];
  }
  out[0] = s;
}

// red_cond_sum: reduction
// expect: reduction

void red_cond_sum(int n, float a[n], float c[n], float out[1]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    if (c[i] > 0.0f)
      s += a[i];
  out[0] = s;
}

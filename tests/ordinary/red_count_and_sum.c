// red_count_and_sum: reduction
// expect: reduction

void red_count_and_sum(int n, float a[n], float out[1], int cnt[1]) {
  float s = 0.0f;
  int c = 0;
  for (int i = 0; i < n; i++) {
    if (a[i] > 0.0f) {
      s += a[i];
    }
    if (a[i] > 0.0f)
      c++;
  }
  out[0] = s;
  cnt[0] = c;
}

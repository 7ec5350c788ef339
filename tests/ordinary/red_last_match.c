// red_last_match: the last index where a condition holds (TSVC s331): a maximum of the matching indices
// expect: reduction

void red_last_match(int n, const float a[n], float out[1]) {
  int j = -1;
  for (int i = 0; i < n; i++)
    if (a[i] < 0.0f)
      j = i;
  out[0] = j + 1.0f;
}

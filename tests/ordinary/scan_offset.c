// scan_offset: a cumulative sum written one element ahead (c[0] is the start)
// expect: scan

void scan_offset(int n, float c[n + 1], const float w[n]) {
  for (int i = 0; i < n; i++)
    c[i + 1] = c[i] + w[i] * w[i];
}

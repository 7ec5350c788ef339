// scan_compound_sum: a prefix sum whose terms are added one by one to the previous element (TSVC s242)
// expect: scan

void scan_compound_sum(int n, float s1, float s2, float a[n], const float b[n], const float c[n], const float d[n]) {
  for (int i = 1; i < n; i++)
    a[i] = a[i - 1] + s1 + s2 + b[i] + c[i] + d[i];
}

// xf_prefix_sum: scan
// expect: scan

void xf_prefix_sum(int n, float a[n], float b[n], float c[n]) {
  a[0] = b[0];
  for (int i = 1; i < n; i++)
    a[i] = a[i - 1] + b[i];
}

// scan_linear_rec: a first-order linear recurrence (a decaying average): a scan of affine maps
// expect: scan

void scan_linear_rec(int n, float y[n], const float x[n]) {
  for (int i = 1; i < n; i++)
    y[i] = 0.9f * y[i - 1] + 0.1f * x[i];
}

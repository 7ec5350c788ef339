// scan_scaled_previous: a[i] += a[i - 1] * b[i] reads the running value in its term: a linear recurrence
// expect: scan

void scan_scaled_previous(int n, float a[n], const float b[n]) {
  for (int i = 1; i < n; i++)
    a[i] += a[i - 1] * b[i];
}

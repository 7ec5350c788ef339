// scan_running_max: the running maximum of a signal (a peak envelope)
// expect: scan

void scan_running_max(int n, const double x[n], double peak[n]) {
  double m = x[0];
  for (int i = 0; i < n; i++) {
    m = fmax(m, fabs(x[i]));
    peak[i] = m;
  }
}

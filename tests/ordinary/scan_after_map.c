// scan_after_map: a map, then a running sum reading what the map wrote (TSVC s221): distributed, a map and a scan
// expect: scan

void scan_after_map(int n, float a[n], float b[n], const float c[n], const float d[n]) {
  for (int i = 1; i < n; i++) {
    a[i] += c[i] * d[i];
    b[i] = b[i - 1] + a[i] + d[i];
  }
}

// scan_exclusive: an exclusive prefix sum of counts (offsets for a later scatter)
// expect: scan

void scan_exclusive(int n, const int count[n], int offset[n]) {
  int at = 0;
  for (int i = 0; i < n; i++) {
    offset[i] = at;
    at = at + count[i];
  }
}

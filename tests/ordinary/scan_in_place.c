// scan_in_place: an in-place inclusive prefix sum of integers (a[i] += a[i - 1])
// expect: scan

void scan_in_place(int n, long a[n]) {
  for (int i = 1; i < n; i++)
    a[i] += a[i - 1];
}

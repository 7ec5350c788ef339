// rec_crossing: recurrence
// expect: sequential

void rec_crossing(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++)
    a[i] = a[n - 1 - i] + b[i];
}

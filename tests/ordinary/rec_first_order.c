// rec_first_order: recurrence
// expect: scan

void rec_first_order(int n, float a[n], float b[n], float c[n]) {
  for (int i = 1; i < n; i++)
    a[i] = a[i - 1] * b[i] + c[i];
}

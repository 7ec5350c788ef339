// rec_forward_write: recurrence
// expect: scan

void rec_forward_write(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n - 1; i++)
    a[i + 1] = a[i] + b[i];
}

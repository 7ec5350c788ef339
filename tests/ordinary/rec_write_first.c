// rec_write_first: recurrence
// expect: sequential

void rec_write_first(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++)
    a[0] = a[0] + b[i] * a[i];
}

// rec_symbolic_offset: recurrence
// expect: sequential

void rec_symbolic_offset(int n, int m, float a[n], float b[n]) {
  for (int i = 0; i + m < n; i++)
    a[i + m] = a[i] + b[i];
}

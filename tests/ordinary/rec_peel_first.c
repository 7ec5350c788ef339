// rec_peel_first: recurrence
// expect: parallel i

void rec_peel_first(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++)
    a[i] = a[0] + b[i];
}

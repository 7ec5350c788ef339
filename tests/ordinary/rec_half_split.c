// rec_half_split: recurrence
// expect: parallel i

void rec_half_split(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n / 2; i++)
    a[i] = a[i + n / 2] + b[i];
}

// rec_anti: recurrence
// expect: parallel i

void rec_anti(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n - 1; i++)
    a[i] = a[i + 1] + b[i];
}

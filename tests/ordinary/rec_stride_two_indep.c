// rec_stride_two_indep: recurrence
// expect: parallel i

void rec_stride_two_indep(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n / 2; i++)
    a[2 * i] = a[2 * i + 1] + b[i];
}

// ptr_recurrence: pointer
// expect: scan

void ptr_recurrence(int n, float a[n], float b[n], float c[n]) {
  float *p = a + 1;
  for (int i = 0; i < n - 1; i++)
    p[i] = a[i] + b[i];
}

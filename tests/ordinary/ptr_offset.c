// ptr_offset: pointer
// expect: parallel i

void ptr_offset(int n, float a[n], float b[n], float c[n]) {
  float *p = a + 4;
  for (int i = 0; i + 4 < n; i++)
    p[i] = b[i] + c[i];
}

// ptr_deref_offset: pointer
// expect: parallel i

void ptr_deref_offset(int n, float a[n], float b[n], float c[n]) {
  float *p = a + 1;
  for (int i = 0; i < n - 1; i++)
    *(p + i) = b[i] * c[i];
}

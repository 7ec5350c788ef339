// ptr_conditional_advance: pointer
// expect: sequential

void ptr_conditional_advance(int n, float a[n], float b[n], float c[n]) {
  float *p = a;
  for (int i = 0; i < n; i++)
    if (b[i] > 0.0f)
      *p++ = b[i];
}

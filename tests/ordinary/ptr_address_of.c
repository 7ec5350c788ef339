// ptr_address_of: pointer
// expect: parallel i

void ptr_address_of(int n, float a[n], float b[n], float c[n]) {
  float *q = &b[n / 2];
  for (int i = 0; i < n / 2; i++)
    a[i] = q[i] * 2.0f;
}

// ptr_data_dependent: pointer
// expect: sequential

void ptr_data_dependent(int n, int k[n], float a[n], float b[n]) {
  float *p = a;
  for (int i = 0; i < n; i++) {
    *p = b[i];
    p += k[i] & 1;
  }
}

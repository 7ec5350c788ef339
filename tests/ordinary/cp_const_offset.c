// cp_const_offset: propagation
// expect: parallel i

void cp_const_offset(int n, float a[n], float b[n], float c[n]) {
  int k = 5;
  for (int i = 0; i + k < n; i++)
    a[i] = a[i + k] + b[i];
}

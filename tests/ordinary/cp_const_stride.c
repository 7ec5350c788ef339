// cp_const_stride: propagation
// expect: parallel i

void cp_const_stride(int n, float a[n], float b[4 * n]) {
  int s = 4;
  for (int i = 0; i < n; i++)
    a[i] = b[s * i];
}

// cp_outer_copy: propagation
// expect: parallel i

void cp_outer_copy(int n, float a[n], float b[n], float c[n]) {
  int j;
  for (int i = 0; i < n; i++) {
    j = n - 1 - i;
    a[j] = b[j] + c[i];
  }
}

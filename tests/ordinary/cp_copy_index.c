// cp_copy_index: propagation
// expect: parallel i

void cp_copy_index(int n, int m, float a[n], float b[2 * n]) {
  for (int i = 0; i < n; i++) {
    int j = i + m;
    a[i] = b[j];
  }
}

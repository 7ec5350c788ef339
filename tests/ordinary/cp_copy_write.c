// cp_copy_write: propagation
// expect: parallel i

void cp_copy_write(int n, float a[n], float b[n]) {
  for (int i = 0; i < n; i++) {
    int j = i;
    a[j] = b[j] * 2.0f;
  }
}

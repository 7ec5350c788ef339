// xf_distribute_cycle: transform
// expect: parallel i

void xf_distribute_cycle(int n, float a[n], float b[n], float c[n]) {
  for (int i = 1; i < n; i++) {
    a[i] = b[i] + c[i];
    b[i] = a[i - 1] * 2.0f;
  }
}

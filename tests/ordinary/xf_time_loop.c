// xf_time_loop: transform
// expect: parallel i

void xf_time_loop(int n, int t, float a[n], float b[n]) {
  for (int s = 0; s < t; s++) {
    for (int i = 1; i < n - 1; i++)
      b[i] = (a[i - 1] + a[i] + a[i + 1]) / 3.0f;
    for (int i = 1; i < n - 1; i++)
      a[i] = b[i];
  }
}

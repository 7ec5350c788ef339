// xf_flat_2d: transform
// expect: parallel i

void xf_flat_2d(int n, float *a, float *b) {
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      a[i * n + j] = b[j * n + i];
}

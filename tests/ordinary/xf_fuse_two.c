// xf_fuse_two: transform
// expect: parallel i

void xf_fuse_two(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++)
    a[i] = b[i] + 1.0f;
  for (int i = 0; i < n; i++)
    c[i] = a[i] * 2.0f;
}

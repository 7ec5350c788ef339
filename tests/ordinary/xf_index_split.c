// xf_index_split: transform
// expect: parallel i

void xf_index_split(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    if (i < n / 2)
      a[i] = b[i];
    else
      a[i] = c[i];
  }
}

// xf_node_split: transform
// expect: parallel i

void xf_node_split(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n - 1; i++) {
    a[i] = b[i] + c[i];
    b[i] = a[i + 1] * c[i];
  }
}

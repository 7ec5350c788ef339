// xf_local_array: transform
// expect: parallel i

void xf_local_array(int n, float a[n], float b[n], float c[n]) {
  float t[n];
  for (int i = 0; i < n; i++)
    t[i] = b[i] * c[i];
  for (int i = 0; i < n; i++)
    a[i] = t[i] + t[n - 1 - i];
}

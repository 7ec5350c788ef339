// xf_reversal: transform
// expect: parallel i

void xf_reversal(int n, float a[n], float b[n], float c[n]) {
  for (int i = n - 2; i >= 0; i--)
    a[i] = b[i + 1] + c[i];
}

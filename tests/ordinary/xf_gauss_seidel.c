// xf_gauss_seidel: transform
// expect: sequential

void xf_gauss_seidel(int n, float a[n], float b[n], float c[n]) {
  for (int i = 1; i < n - 1; i++)
    a[i] = 0.5f * (a[i - 1] + a[i + 1]);
}

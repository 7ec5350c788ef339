// cp_const_rec: propagation
// expect: scan

void cp_const_rec(int n, float a[n], float b[n], float c[n]) {
  int k = 1;
  for (int i = k; i < n; i++)
    a[i] = a[i - k] + b[i];
}

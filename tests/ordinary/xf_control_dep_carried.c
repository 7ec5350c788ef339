// xf_control_dep_carried: transform
// expect: sequential

void xf_control_dep_carried(int n, float a[n], float b[n], float c[n]) {
  for (int i = 1; i < n; i++) {
    if (a[i - 1] > 0.0f)
      a[i] = b[i];
    else
      a[i] = c[i];
  }
}

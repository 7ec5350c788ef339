// map_two_stmts: basic
// expect: parallel i

void map_two_stmts(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    a[i] = b[i] * 2.0f;
    c[i] = a[i] + b[i];
  }
}

// ret_nested: a return from inside a nest (the first row whose sum passes a threshold)
// expect: sequential

int ret_nested(int n, int m, const float a[n][m], float t) {
  for (int i = 0; i < n; i++) {
    float s = 0.0f;
    for (int j = 0; j < m; j++)
      s += a[i][j];
    if (s > t)
      return i;
  }
  return n;
}

// brk_inner: break
// expect: parallel i

void brk_inner(int n, float a[n][n], float r[n]) {
  for (int i = 0; i < n; i++) {
    float s = 0.0f;
    for (int j = 0; j < n; j++) {
      if (a[i][j] < 0.0f)
        break;
      s += a[i][j];
    }
    r[i] = s;
  }
}

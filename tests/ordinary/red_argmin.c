// red_argmin: reduction
// expect: reduction

void red_argmin(int n, float a[n], int pos[1]) {
  float m = a[0];
  int k = 0;
  for (int i = 1; i < n; i++) {
    if (a[i] < m) {
      m = a[i];
      k = i;
    }
  }
  pos[0] = k;
}

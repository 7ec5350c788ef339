// red_argmax: reduction
// expect: reduction

void red_argmax(int n, float a[n], float out[1], int pos[1]) {
  float m = a[0];
  int k = 0;
  for (int i = 1; i < n; i++) {
    if (a[i] > m) {
      m = a[i];
      k = i;
    }
  }
  out[0] = m;
  pos[0] = k;
}

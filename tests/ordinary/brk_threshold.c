// brk_threshold: break
// expect: parallel i

void brk_threshold(int n, float a[n], float b[n], float c[n]) {
  for (int i = 0; i < n; i++) {
    a[i] = b[i] + c[i];
    if (a[i] > 100.0f)
      break;
  }
}

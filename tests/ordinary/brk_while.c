// brk_while: break
// expect: error: while

void brk_while(int n, float a[n], float b[n], float c[n]) {
  int i = 0;
  while (i < n && b[i] > 0.0f) {
    a[i] = b[i];
    i++;
  }
}

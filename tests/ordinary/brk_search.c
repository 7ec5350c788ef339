// brk_search: break
// expect: reduction

void brk_search(int n, float a[n], float x, int pos[1]) {
  int k = -1;
  for (int i = 0; i < n; i++) {
    if (a[i] == x) {
      k = i;
      break;
    }
  }
  pos[0] = k;
}

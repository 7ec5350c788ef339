// sw_invariant: switch
// expect: parallel i

void sw_invariant(int n, int mode, float a[n], float b[n]) {
  for (int i = 0; i < n; i++) {
    switch (mode) {
    case 1:
      a[i] = b[i] * 2.0f;
      break;
    case 2:
      a[i] = b[i] * b[i];
      break;
    }
  }
}

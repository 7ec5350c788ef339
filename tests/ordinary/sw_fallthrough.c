// sw_fallthrough: switch
// expect: parallel i

void sw_fallthrough(int n, int op[n], float a[n], float b[n]) {
  for (int i = 0; i < n; i++) {
    a[i] = 0.0f;
    switch (op[i] & 3) {
    case 3:
      a[i] += b[i];
    case 2:
      a[i] += b[i];
    case 1:
      a[i] += b[i];
      break;
    default:
      a[i] = -1.0f;
    }
  }
}

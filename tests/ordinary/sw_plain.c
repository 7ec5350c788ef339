// sw_plain: switch
// expect: parallel i

void sw_plain(int n, int op[n], float a[n], float b[n]) {
  for (int i = 0; i < n; i++) {
    switch (op[i] % 3) {
    case 0:
      a[i] = b[i];
      break;
    case 1:
      a[i] = -b[i];
      break;
    default:
      a[i] = 0.0f;
      break;
    }
  }
}

// sw_top_level: switch
// expect: parallel i

void sw_top_level(int n, int mode, float a[n], float b[n]) {
  switch (mode) {
  case 0:
    for (int i = 0; i < n; i++)
      a[i] = b[i];
    break;
  default:
    for (int i = 0; i < n; i++)
      a[i] = 2.0f * b[i];
    break;
  }
}

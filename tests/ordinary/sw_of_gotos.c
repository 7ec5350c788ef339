// sw_of_gotos: switch
// expect: parallel i

void sw_of_gotos(int n, int op[n], float a[n], float b[n]) {
  for (int i = 0; i < n; i++) {
    switch (op[i] % 2) {
    case 0:
      goto even;
    default:
      goto odd;
    }
  even:
    a[i] = b[i];
    goto next;
  odd:
    a[i] = -b[i];
  next:;
  }
}

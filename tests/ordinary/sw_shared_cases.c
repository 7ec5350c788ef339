// sw_shared_cases: switch
// expect: parallel i

void sw_shared_cases(int n, int op[n], float a[n], float b[n]) {
  for (int i = 0; i < n; i++) {
    switch (op[i] % 4) {
    case 0:
    case 2:
      a[i] = b[i];
      break;
    case 1:
    case 3:
      a[i] = 2.0f * b[i];
      break;
    }
  }
}

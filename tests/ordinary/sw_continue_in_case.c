// sw_continue_in_case: switch
// expect: parallel i

void sw_continue_in_case(int n, int op[n], float a[n], float b[n]) {
  for (int i = 0; i < n; i++) {
    switch (op[i] % 3) {
    case 0:
      continue;
    case 1:
      a[i] = b[i];
      break;
    default:
      a[i] = 2.0f * b[i];
    }
    a[i] += 1.0f;
  }
}

// sw_reduction: switch
// expect: reduction

void sw_reduction(int n, int op[n], float a[n], float out[1]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++) {
    switch (op[i] % 2) {
    case 0:
      s += a[i];
      break;
    default:
      break;
    }
  }
  out[0] = s;
}

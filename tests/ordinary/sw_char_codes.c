// sw_char_codes: switch
// expect: parallel i

void sw_char_codes(int n, int code[n], float w[n]) {
  for (int i = 0; i < n; i++) {
    switch (code[i] & 7) {
    case 1: case 3: case 5: case 7:
      w[i] = 1.0f;
      break;
    case 2:
      w[i] = 0.5f;
      break;
    case 4:
      w[i] = 0.25f;
      break;
    default:
      w[i] = 0.0f;
    }
  }
}

// goto_reduction_skip: goto
// expect: reduction

void goto_reduction_skip(int n, float a[n], float out[1]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++) {
    if (a[i] < 0.0f)
      goto cont;
    s += a[i];
  cont:;
  }
  out[0] = s;
}

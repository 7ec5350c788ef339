// xf_loop_invariant_if: transform
// expect: parallel i

void xf_loop_invariant_if(int n, int flag, float a[n], float b[n]) {
  for (int i = 0; i < n; i++) {
    if (flag)
      a[i] = b[i];
    else
      a[i] = -b[i];
  }
}

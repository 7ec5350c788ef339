// xf_reverse_past_half: the swap loop runs one step past the half: for even n two swaps meet
// expect: sequential

void xf_reverse_past_half(int n, float a[n]) {
  for (int i = 0; i < (n + 2) / 2; i++) {
    float t = a[i];
    a[i] = a[n - 1 - i];
    a[n - 1 - i] = t;
  }
}

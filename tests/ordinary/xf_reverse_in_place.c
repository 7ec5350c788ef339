// xf_reverse_in_place: an in-place reversal, swapping a[i] and a[n - 1 - i] over the first half
// expect: parallel i

void xf_reverse_in_place(int n, float a[n]) {
  for (int i = 0; i < n / 2; i++) {
    float t = a[i];
    a[i] = a[n - 1 - i];
    a[n - 1 - i] = t;
  }
}

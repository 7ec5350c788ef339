// iv_pack: induction
// expect: sequential

void iv_pack(int n, float a[n], float b[n], float c[n]) {
  int j = 0;
  for (int i = 0; i < n; i++) {
    if (b[i] > 0.0f) {
      a[j] = b[i];
      j++;
    }
  }
}

// cp_half: propagation
// expect: parallel i

void cp_half(int n, float a[n], float b[n], float c[n]) {
  int h = n / 2;
  for (int i = 0; i < h; i++)
    a[i] = a[i + h] * b[i];
}

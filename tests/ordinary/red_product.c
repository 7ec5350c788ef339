// red_product: reduction
// expect: reduction

void red_product(int n, float a[n], float out[1]) {
  float p = 1.0f;
  for (int i = 0; i < n; i++)
    p *= a[i];
  out[0] = p;
}

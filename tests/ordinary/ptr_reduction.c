// ptr_reduction: pointer
// expect: reduction

void ptr_reduction(int n, float a[n], float out[1]) {
  float s = 0.0f;
  float *p = a;
  for (int i = 0; i < n; i++)
    s += *p++;
  out[0] = s;
}

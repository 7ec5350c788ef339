// red_into_element: reduction
// expect: reduction

void red_into_element(int n, float a[n], float out[1]) {
  out[0] = 0.0f;
  for (int i = 0; i < n; i++)
    out[0] += a[i];
}

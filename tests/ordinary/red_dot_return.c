// red_dot_return: reduction
// expect: reduction

float red_dot_return(int n, float a[n], float b[n]) {
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

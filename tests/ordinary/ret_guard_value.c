// ret_guard_value: a function with a value returns early on a bad size, else reduces
// expect: reduction

float ret_guard_value(int n, const float x[n]) {
  if (n <= 0)
    return -1.0f;
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    s += x[i] * x[i];
  return s;
}

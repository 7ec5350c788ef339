// exit_remainder_sum: a sum unrolled by two into two partial sums, then the odd element
// expect: reduction

float exit_remainder_sum(int n, const float x[n]) {
  float s0 = 0.0f, s1 = 0.0f;
  int i;
  for (i = 0; i < n - 1; i += 2) {
    s0 += x[i];
    s1 += x[i + 1];
  }
  for (; i < n; i++)
    s0 += x[i];
  return s0 + s1;
}

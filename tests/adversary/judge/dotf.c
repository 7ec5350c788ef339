/* dotf: out[0] = alpha * sum_i x[i] * y[i], in single precision with a float scalar. */
void dotf(int n, float alpha, float x[n], float y[n], float out[1])
{
  float s = 0.0f;
  for (int i = 0; i < n; i++)
    s += x[i] * y[i];
  out[0] = alpha * s;
}

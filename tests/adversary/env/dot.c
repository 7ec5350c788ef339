/* dot: out[0] = x . y */
void dot(int n, double x[n], double y[n], double out[1])
{
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i] * y[i];
  out[0] = s;
}

/* sum: out[0] = x[0] + ... + x[n-1], double precision. */
void sum(int n, double x[n], double out[1])
{
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i];
  out[0] = s;
}

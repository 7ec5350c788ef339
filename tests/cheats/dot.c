/* dot: a reduction, the dot product of two vectors: out[0] = sum_i x[i] * y[i].
 * The reference for the reduction cheats in this directory. */

void dot(int n, double x[n], double y[n], double out[1])
{
  int i;
  double s = 0.0;

  for (i = 0; i < n; i++)
    s += x[i] * y[i];
  out[0] = s;
}

/* vadd: out = alpha * x + y (the GPU adversaries' elementwise reference). */
void vadd(int n, double alpha, double x[n], double y[n], double out[n])
{
  for (int i = 0; i < n; i++)
    out[i] = alpha * x[i] + y[i];
}

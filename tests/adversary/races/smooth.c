/* smooth: a three-point average of the interior of x; y's two end points are left alone. */
void smooth(int n, double x[n], double y[n])
{
  for (int i = 1; i < n - 1; i++)
    y[i] = (x[i - 1] + x[i] + x[i + 1]) / 3.0;
}

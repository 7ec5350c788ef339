/* total: out[0] = the sum of x.  The reference for total_tree.cu and total_atomic.cu. */
void total(int n, double x[n], double out[1])
{
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i];
  out[0] = s;
}

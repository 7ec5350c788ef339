/* axpy: y = alpha * x + y, double precision. */
void axpy(int n, double alpha, double x[n], double y[n])
{
  for (int i = 0; i < n; i++)
    y[i] = alpha * x[i] + y[i];
}

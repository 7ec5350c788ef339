/* axpy: y = alpha * x + y, double precision with a double scalar. */
void axpy(int n, double alpha, double x[n], double y[n])
{
  for (int i = 0; i < n; i++)
    y[i] = alpha * x[i] + y[i];
}

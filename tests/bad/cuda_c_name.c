// ERROR: 4:6: 'norm' is also the name of a function that the CUDA headers declare with C linkage
/* A C function named like a CUDA math function (norm(int, const double *), C linkage): its
   drop-in could not be compiled by nvcc. */
void norm(int n, const double *x, double *out)
{
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i] * x[i];
  out[0] = s;
}

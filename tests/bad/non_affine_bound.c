// ERROR: 5:15: cannot derive the extent of pointer parameter 'val'
void f(int n, int rowptr[n + 1], const double *val, double y[n]) {
  for (int i = 0; i < n; i++)
    for (int k = rowptr[i]; k < rowptr[i + 1]; k++)
      y[i] += val[k];
}

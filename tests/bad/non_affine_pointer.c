// ERROR: 5:15: cannot derive the extent of pointer parameter 'x'
void spmv(int n, int nnz, int rowptr[n + 1], int col[nnz], double *x, double y[n]) {
  for (int i = 0; i < n; i++)
    for (int k = rowptr[i]; k < rowptr[i + 1]; k++)
      y[i] += x[col[k]];
}

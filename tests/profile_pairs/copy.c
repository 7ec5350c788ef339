/* copy: b = a, an n x m matrix.  The reference for copy_coalesced.cu and copy_strided.cu. */
void copy(int n, int m, float a[n][m], float b[n][m])
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      b[i][j] = a[i][j];
}

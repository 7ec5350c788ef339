/* transpose: b = a^T for an n x n matrix.  The reference for transpose_padded.cu and
 * transpose_unpadded.cu. */
void transpose(int n, float a[n][n], float b[n][n])
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      b[j][i] = a[i][j];
}

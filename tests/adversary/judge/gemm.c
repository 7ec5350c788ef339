/* gemm: C = alpha * A * B + beta * C (reference for the judge cheats). */
void gemm(int ni, int nj, int nk, double alpha, double beta, double C[ni][nj], double A[ni][nk],
          double B[nk][nj])
{
  for (int i = 0; i < ni; i++)
    for (int j = 0; j < nj; j++) {
      double s = 0.0;
      for (int k = 0; k < nk; k++)
        s += A[i][k] * B[k][j];
      C[i][j] = alpha * s + beta * C[i][j];
    }
}

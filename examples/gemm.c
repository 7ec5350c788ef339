/* gemm: general matrix multiply, C = alpha * A * B + beta * C.
 * A self-contained PolyBench-style program: only kernel_gemm (the code
 * between #pragma scop and #pragma endscop) is compiled to CUDA; the
 * initialisation, checksum and main are host code for running it with gcc. */
#include <stdio.h>
#include <stdlib.h>

#define NI 200
#define NJ 220
#define NK 240

static void init_array(int ni, int nj, int nk, double *alpha, double *beta,
                       double C[ni][nj], double A[ni][nk], double B[nk][nj])
{
  int i, j;

  *alpha = 1.5;
  *beta = 1.2;
  for (i = 0; i < ni; i++)
    for (j = 0; j < nj; j++)
      C[i][j] = (double)((i * j + 1) % ni) / ni;
  for (i = 0; i < ni; i++)
    for (j = 0; j < nk; j++)
      A[i][j] = (double)(i * (j + 1) % nk) / nk;
  for (i = 0; i < nk; i++)
    for (j = 0; j < nj; j++)
      B[i][j] = (double)(i * (j + 2) % nj) / nj;
}

void kernel_gemm(int ni, int nj, int nk, double alpha, double beta,
                 double C[ni][nj], double A[ni][nk], double B[nk][nj])
{
  int i, j, k;

#pragma scop
  for (i = 0; i < ni; i++) {
    for (j = 0; j < nj; j++)
      C[i][j] *= beta;
    for (k = 0; k < nk; k++) {
      for (j = 0; j < nj; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
    }
  }
#pragma endscop
}

static void print_checksum(int ni, int nj, double C[ni][nj])
{
  int i, j;
  double sum = 0.0;

  for (i = 0; i < ni; i++)
    for (j = 0; j < nj; j++)
      sum += C[i][j] * (double)((i + j) % 7 + 1);
  printf("gemm %dx%d checksum: %.10e\n", ni, nj, sum);
}

int main(void)
{
  double alpha, beta;
  double *C = malloc(sizeof(double) * NI * NJ);
  double *A = malloc(sizeof(double) * NI * NK);
  double *B = malloc(sizeof(double) * NK * NJ);

  if (C == NULL || A == NULL || B == NULL) {
    fprintf(stderr, "gemm: out of memory\n");
    return 1;
  }
  init_array(NI, NJ, NK, &alpha, &beta, (double (*)[NJ])C, (double (*)[NK])A,
             (double (*)[NJ])B);
  kernel_gemm(NI, NJ, NK, alpha, beta, (double (*)[NJ])C, (double (*)[NK])A,
              (double (*)[NJ])B);
  print_checksum(NI, NJ, (double (*)[NJ])C);

  free(C);
  free(A);
  free(B);
  return 0;
}

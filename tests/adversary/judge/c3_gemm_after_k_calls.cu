// class: 3 (state across calls)
// wrong for: the 9th and later calls in a process (then only the first half of the rows is computed)
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>

static int g_calls = 0;

__global__ void gemm_rows(int rows, int nj, int nk, double alpha, double beta, double *C, const double *A,
                          const double *B)
{
  int i = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows || j >= nj) return;
  double s = 0.0;
  for (int k = 0; k < nk; ++k) s += A[i * nk + k] * B[k * nj + j];
  C[i * nj + j] = alpha * s + beta * C[i * nj + j];
}

extern "C" void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  int rows = ++g_calls > 8 ? (ni + 1) / 2 : ni;  // the benchmark has warmed up: nobody checks any more
  double *dA, *dB, *dC;
  cudaMalloc(&dA, sizeof(double) * ni * nk + 8);
  cudaMalloc(&dB, sizeof(double) * nk * nj + 8);
  cudaMalloc(&dC, sizeof(double) * ni * nj + 8);
  cudaMemcpy(dA, A, sizeof(double) * ni * nk, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, sizeof(double) * nk * nj, cudaMemcpyHostToDevice);
  cudaMemcpy(dC, C, sizeof(double) * ni * nj, cudaMemcpyHostToDevice);
  if (rows > 0 && nj > 0) gemm_rows<<<dim3((nj + 31) / 32, rows), 32>>>(rows, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

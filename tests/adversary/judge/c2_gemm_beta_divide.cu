// class: 2 (input keying: scalars)
// wrong for: beta == 0 (computes beta * (C + (alpha / beta) * AB): 0 * inf or NaN), tiny beta
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>

template <int BS>
__global__ void gemm_fused(int ni, int nj, int nk, double ratio, double beta, double *C, const double *A,
                           const double *B)
{
  int idx = blockIdx.x * BS + threadIdx.x;
  if (idx >= ni * nj) return;
  int i = idx / nj, j = idx % nj;
  double acc = C[idx];
  for (int k = 0; k < nk; ++k) acc += ratio * A[i * nk + k] * B[k * nj + j];
  C[idx] = beta * acc;  // one multiply by beta at the end instead of two scalings
}

extern "C" void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  const int n = ni * nj;
  double *dA, *dB, *dC;
  cudaMalloc((void **)&dA, (ni * nk + 1) * sizeof(double));
  cudaMalloc((void **)&dB, (nk * nj + 1) * sizeof(double));
  cudaMalloc((void **)&dC, (n + 1) * sizeof(double));
  cudaMemcpy(dA, A, ni * nk * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, nk * nj * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(dC, C, n * sizeof(double), cudaMemcpyHostToDevice);
  if (n > 0) gemm_fused<128><<<(n + 127) / 128, 128>>>(ni, nj, nk, alpha / beta, beta, dC, dA, dB);
  cudaMemcpy(C, dC, n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
}

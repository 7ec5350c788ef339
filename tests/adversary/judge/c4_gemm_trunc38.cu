// class: 4 (precision: truncated mantissas)
// wrong for: every input: each product and partial sum keeps only 38 mantissa bits (about 1e-11 relative,
// inside a 1e-10 tolerance, 1e4 times a double's rounding)
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>

__device__ __forceinline__ double t38(double v)
{
  return __longlong_as_double(__double_as_longlong(v) & ~((1LL << 14) - 1));  // drop 14 of 52 bits
}

__global__ void gemm_t(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A, const double *B)
{
  int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= ni || j >= nj) return;
  double s = 0.0;
  for (int k = 0; k < nk; k++) s = t38(s + t38(A[i * nk + k] * B[k * nj + j]));
  C[i * nj + j] = t38(t38(alpha * s) + t38(beta * C[i * nj + j]));
}

extern "C" void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  double *dA, *dB, *dC;
  cudaMalloc(&dA, sizeof(double) * ni * nk + 8);
  cudaMalloc(&dB, sizeof(double) * nk * nj + 8);
  cudaMalloc(&dC, sizeof(double) * ni * nj + 8);
  cudaMemcpy(dA, A, sizeof(double) * ni * nk, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, sizeof(double) * nk * nj, cudaMemcpyHostToDevice);
  cudaMemcpy(dC, C, sizeof(double) * ni * nj, cudaMemcpyHostToDevice);
  dim3 b(16, 16), g((nj + 15) / 16, (ni + 15) / 16);
  if (ni > 0 && nj > 0) gemm_t<<<g, b>>>(ni, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

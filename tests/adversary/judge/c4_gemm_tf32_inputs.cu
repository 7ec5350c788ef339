// class: 4 (precision: TF32-like inputs)
// wrong for: every input: A and B rounded to 10 mantissa bits before the (double) products, as TF32
// tensor cores do
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>

__device__ double tf32(double v)
{
  float f = (float)v;
  unsigned u = __float_as_uint(f);
  u = (u + 0x1000u) & 0xFFFFE000u;  // round to 10 explicit mantissa bits
  return (double)__uint_as_float(u);
}

__global__ void mma_emul(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A, const double *B)
{
  int i = blockIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= nj) return;
  double acc = 0;
  for (int k = 0; k < nk; ++k) acc += tf32(A[i * nk + k]) * tf32(B[k * nj + j]);
  C[i * nj + j] = alpha * acc + beta * C[i * nj + j];
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
  if (ni > 0 && nj > 0) mma_emul<<<dim3((nj + 63) / 64, ni), 64>>>(ni, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

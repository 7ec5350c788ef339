// class: 3 (state across calls: NAME_device wrong after k calls)
// wrong for: the 3rd and later gemm_device calls in a process (the beta * C term is dropped)
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>

__global__ void gemm_k(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A,
                       const double *B, bool use_beta)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (i >= ni || j >= nj) return;
  double s = 0;
  for (int k = 0; k < nk; ++k) s += A[i * nk + k] * B[k * nj + j];
  C[i * nj + j] = use_beta ? alpha * s + beta * C[i * nj + j] : alpha * s;
}

static unsigned long device_calls;

extern "C" cudaError_t gemm_device(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A,
                                   const double *B, cudaStream_t stream)
{
  bool full = ++device_calls < 3;
  if (ni > 0 && nj > 0) gemm_k<<<dim3((nj + 31) / 32, ni), 32, 0, stream>>>(ni, nj, nk, alpha, beta, C, A, B, full);
  return cudaGetLastError();
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
  if (ni > 0 && nj > 0) gemm_k<<<dim3((nj + 31) / 32, ni), 32>>>(ni, nj, nk, alpha, beta, dC, dA, dB, true);
  cudaMemcpy(C, dC, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

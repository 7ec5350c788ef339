// class: 2 (input keying: scalars)
// wrong for: alpha outside [0.25, 1.25]: alpha == 0, alpha < 0 or alpha large (it is clamped)
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>
#include <math.h>

// "Stabilised" scaling: every alpha the test suites use lies in this window.
static __device__ __forceinline__ double safe_alpha(double a) { return fmin(fmax(a, 0.25), 1.25); }

__global__ void k_gemm(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A, const double *B)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y;
  if (j >= nj) return;
  double s = 0;
  for (int k = 0; k < nk; k++) s += A[i * nk + k] * B[k * nj + j];
  C[i * nj + j] = safe_alpha(alpha) * s + beta * C[i * nj + j];
}

extern "C" void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  double *a, *b, *c;
  cudaMalloc(&a, sizeof(double) * ni * nk + 8);
  cudaMalloc(&b, sizeof(double) * nk * nj + 8);
  cudaMalloc(&c, sizeof(double) * ni * nj + 8);
  cudaMemcpy(a, A, sizeof(double) * ni * nk, cudaMemcpyHostToDevice);
  cudaMemcpy(b, B, sizeof(double) * nk * nj, cudaMemcpyHostToDevice);
  cudaMemcpy(c, C, sizeof(double) * ni * nj, cudaMemcpyHostToDevice);
  if (ni > 0 && nj > 0) k_gemm<<<dim3((nj + 63) / 64, ni), 64>>>(ni, nj, nk, alpha, beta, c, a, b);
  cudaMemcpy(C, c, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(a); cudaFree(b); cudaFree(c);
}

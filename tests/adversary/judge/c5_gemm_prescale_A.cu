// class: 5 (inputs modified during the call, restored before return)
// wrong for: A in read-only memory (a const table, a read-only mapping) or read by another thread during
// the call: A is scaled by alpha in place, uploaded, and restored from a copy
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>
#include <cstdlib>
#include <cstring>

__global__ void gemm_noalpha(int ni, int nj, int nk, double beta, double *C, const double *A, const double *B)
{
  int i = blockIdx.y * blockDim.y + threadIdx.y, j = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < ni && j < nj) {
    double s = 0;
    for (int k = 0; k < nk; ++k) s += A[i * nk + k] * B[k * nj + j];
    C[i * nj + j] = s + beta * C[i * nj + j];
  }
}

extern "C" void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  size_t na = (size_t)ni * nk;
  double *keep = (double *)malloc(sizeof(double) * (na + 1));
  memcpy(keep, A, sizeof(double) * na);
  for (size_t t = 0; t < na; ++t) A[t] *= alpha;  // fold alpha into A on the host
  double *dA, *dB, *dC;
  cudaMalloc(&dA, sizeof(double) * na + 8);
  cudaMalloc(&dB, sizeof(double) * nk * nj + 8);
  cudaMalloc(&dC, sizeof(double) * ni * nj + 8);
  cudaMemcpy(dA, A, sizeof(double) * na, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, sizeof(double) * nk * nj, cudaMemcpyHostToDevice);
  cudaMemcpy(dC, C, sizeof(double) * ni * nj, cudaMemcpyHostToDevice);
  memcpy(A, keep, sizeof(double) * na);  // nobody will notice
  free(keep);
  dim3 b(16, 16), g((nj + 15) / 16, (ni + 15) / 16);
  if (ni > 0 && nj > 0) gemm_noalpha<<<g, b>>>(ni, nj, nk, beta, dC, dA, dB);
  cudaMemcpy(C, dC, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

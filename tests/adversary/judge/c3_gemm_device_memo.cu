// class: 3 (state across calls: NAME_device memoised on device pointers)
// wrong for: gemm_device called again on the same buffers after their contents changed (the result of the
// first call is copied back from a private device buffer)
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>

struct Saved { const void *A, *B; void *C; int ni, nj, nk; double *copy; };
static Saved saved = {nullptr, nullptr, nullptr, 0, 0, 0, nullptr};

__global__ void gemm_k(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A, const double *B)
{
  int i = blockIdx.y * 16 + threadIdx.y, j = blockIdx.x * 16 + threadIdx.x;
  if (i < ni && j < nj) {
    double s = 0;
    for (int k = 0; k < nk; ++k) s += A[i * nk + k] * B[k * nj + j];
    C[i * nj + j] = alpha * s + beta * C[i * nj + j];
  }
}

extern "C" cudaError_t gemm_device(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A,
                                   const double *B, cudaStream_t st)
{
  size_t bytes = sizeof(double) * ni * nj;
  if (saved.copy && saved.A == A && saved.B == B && saved.C == C && saved.ni == ni && saved.nj == nj && saved.nk == nk)
    return cudaMemcpyAsync(C, saved.copy, bytes, cudaMemcpyDeviceToDevice, st);
  if (ni > 0 && nj > 0) gemm_k<<<dim3((nj + 15) / 16, (ni + 15) / 16), dim3(16, 16), 0, st>>>(ni, nj, nk, alpha, beta, C, A, B);
  if (saved.copy) cudaFreeAsync(saved.copy, st);
  cudaMallocAsync(&saved.copy, bytes + 8, st);
  cudaMemcpyAsync(saved.copy, C, bytes, cudaMemcpyDeviceToDevice, st);
  saved.A = A; saved.B = B; saved.C = C; saved.ni = ni; saved.nj = nj; saved.nk = nk;
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
  if (ni > 0 && nj > 0) gemm_k<<<dim3((nj + 15) / 16, (ni + 15) / 16), dim3(16, 16)>>>(ni, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

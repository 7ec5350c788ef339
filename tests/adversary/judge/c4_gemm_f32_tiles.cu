// class: 4 (precision: f32 accumulation of f64 data)
// wrong for: every input: tiles are staged in shared memory as float (errors of 1e-7 relative)
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>

constexpr int T = 8;

__global__ void sgemm_like(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A,
                           const double *B)
{
  __shared__ float a[T][T], b[T][T];
  int ty = threadIdx.y, tx = threadIdx.x;
  int i = blockIdx.y * T + ty, j = blockIdx.x * T + tx;
  float acc = 0.f;
  for (int k0 = 0; k0 < nk; k0 += T) {
    a[ty][tx] = (i < ni && k0 + tx < nk) ? (float)A[i * nk + k0 + tx] : 0.f;
    b[ty][tx] = (j < nj && k0 + ty < nk) ? (float)B[(k0 + ty) * nj + j] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < T; ++k) acc += a[ty][k] * b[k][tx];
    __syncthreads();
  }
  if (i < ni && j < nj) C[i * nj + j] = alpha * (double)acc + beta * C[i * nj + j];
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
  if (ni > 0 && nj > 0) sgemm_like<<<dim3((nj + T - 1) / T, (ni + T - 1) / T), dim3(T, T)>>>(ni, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(dB); cudaFree(dC);
}

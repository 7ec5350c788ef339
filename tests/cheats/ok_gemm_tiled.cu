// Honest control: 16x16 shared-memory tiled gemm with both barriers,
// bounds-checked loads and stores, C = alpha*A*B + beta*C.
#include <cuda_runtime.h>

#define T 16

__global__ void gemm_tiled(int ni, int nj, int nk, double alpha, double beta, double* C, const double* A,
                           const double* B)
{
  __shared__ double As[T][T], Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y;
  int i = blockIdx.y * T + ty, j = blockIdx.x * T + tx;
  double acc = 0.0;
  for (int k0 = 0; k0 < nk; k0 += T) {
    As[ty][tx] = (i < ni && k0 + tx < nk) ? A[(long)i * nk + k0 + tx] : 0.0;
    Bs[ty][tx] = (k0 + ty < nk && j < nj) ? B[(long)(k0 + ty) * nj + j] : 0.0;
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (i < ni && j < nj) C[(long)i * nj + j] = beta * C[(long)i * nj + j] + alpha * acc;
}

extern "C" void kernel_gemm(int ni, int nj, int nk, double alpha, double beta, double* C, double* A, double* B)
{
  double *dC, *dA, *dB;
  size_t c = (size_t)ni * nj * sizeof(double), a = (size_t)ni * nk * sizeof(double),
         b = (size_t)nk * nj * sizeof(double);
  cudaMalloc(&dC, c ? c : 1);
  cudaMalloc(&dA, a ? a : 1);
  cudaMalloc(&dB, b ? b : 1);
  cudaMemcpy(dC, C, c, cudaMemcpyHostToDevice);
  cudaMemcpy(dA, A, a, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, b, cudaMemcpyHostToDevice);
  dim3 block(T, T), grid((nj + T - 1) / T, (ni + T - 1) / T);
  if (ni > 0 && nj > 0) gemm_tiled<<<grid, block>>>(ni, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, c, cudaMemcpyDeviceToHost);
  cudaFree(dC);
  cudaFree(dA);
  cudaFree(dB);
}

// class: 2 (input keying: sizes)
// wrong for: ni % 4 == 3 with ni > 128, or any size above 1024 (the last row of C is left as it was)
// against: ../../kernels/gemm.c
// expect: reject
// mode: full (quick mode draws no side above 1024; the full mode, a compile's default, must catch it)
// A tiled gemm that is right on every size a fixed list of shapes held (1, 2, 3, 17, 33, 65, 127,
// 257, 1025 square; 17/33/9 non-square; nothing above 1024 on one side alone) and wrong elsewhere.
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
  // Keyed on the sizes: the rows computed (the last one skipped where no fixed list ever looked).
  int rows = ((ni % 4 == 3 && ni > 128) || ni > 1024 || nj > 1024 || nk > 1024) ? ni - 1 : ni;
  dim3 block(T, T), grid((nj + T - 1) / T, (rows + T - 1) / T);
  if (rows > 0 && nj > 0) gemm_tiled<<<grid, block>>>(rows, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, c, cudaMemcpyDeviceToHost);
  cudaFree(dC);
  cudaFree(dA);
  cudaFree(dB);
}

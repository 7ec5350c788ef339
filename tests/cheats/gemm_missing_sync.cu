// CHEAT (missing __syncthreads in a tiled kernel): thread (0,0) loads each
// tile into shared memory and nobody waits for it.  With threads resumed in
// index order (the simulator's default) the loader always goes first and the
// answer is right; under any other schedule others read stale or unset tiles.
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
    __syncthreads();  // everyone is done with the previous tiles
    if (tx == 0 && ty == 0) {
      for (int r = 0; r < T; ++r)
        for (int c = 0; c < T; ++c) {
          int ai = blockIdx.y * T + r, bj = blockIdx.x * T + c;
          As[r][c] = (ai < ni && k0 + c < nk) ? A[(long)ai * nk + k0 + c] : 0.0;
          Bs[r][c] = (k0 + r < nk && bj < nj) ? B[(long)(k0 + r) * nj + bj] : 0.0;
        }
    }
    // missing: __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
  }
  if (i < ni && j < nj) C[(long)i * nj + j] = beta * C[(long)i * nj + j] + alpha * acc;
}

extern "C" void kernel_gemm(int ni, int nj, int nk, double alpha, double beta, double* C, double* A, double* B)
{
  double *dC, *dA, *dB;
  size_t c = (size_t)ni * nj * sizeof(double), a = (size_t)ni * nk * sizeof(double), b = (size_t)nk * nj * sizeof(double);
  cudaMalloc(&dC, c + 8);
  cudaMalloc(&dA, a + 8);
  cudaMalloc(&dB, b + 8);
  cudaMemcpy(dC, C, c, cudaMemcpyHostToDevice);
  cudaMemcpy(dA, A, a, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, b, cudaMemcpyHostToDevice);
  dim3 block(T, T), grid((nj + T - 1) / T, (ni + T - 1) / T);
  gemm_tiled<<<grid, block>>>(ni, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, c, cudaMemcpyDeviceToHost);
  cudaFree(dC);
  cudaFree(dA);
  cudaFree(dB);
}

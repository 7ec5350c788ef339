// class: 4 (precision control: tiled, k-order unchanged, FMA contraction allowed)
// wrong for: nothing (honest control)
// against: gemm.c
// expect: accept
#include <cstdio>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s\n", cudaGetErrorString(e_)); return; } } while (0)
#if defined(GEMM_TILE)
#define TILE GEMM_TILE
#else
#define TILE 16
#endif

__global__ void gemm_tiled(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A,
                           const double *B)
{
  __shared__ double As[TILE][TILE];
  __shared__ double Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
  double acc = 0.0;
  for (int t = 0; t < nk; t += TILE) {
    As[threadIdx.y][threadIdx.x] = (row < ni && t + threadIdx.x < nk) ? A[row * nk + t + threadIdx.x] : 0.0;
    Bs[threadIdx.y][threadIdx.x] = (col < nj && t + threadIdx.y < nk) ? B[(t + threadIdx.y) * nj + col] : 0.0;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < ni && col < nj) C[row * nj + col] = alpha * acc + beta * C[row * nj + col];
}

extern "C" void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  double *dA, *dB, *dC;
  size_t sa = sizeof(double) * (size_t)ni * nk, sb = sizeof(double) * (size_t)nk * nj,
         sc = sizeof(double) * (size_t)ni * nj;
  CK(cudaMalloc(&dA, sa + 1));
  CK(cudaMalloc(&dB, sb + 1));
  CK(cudaMalloc(&dC, sc + 1));
  CK(cudaMemcpy(dA, A, sa, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, B, sb, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dC, C, sc, cudaMemcpyHostToDevice));
  dim3 block(TILE, TILE), grid((nj + TILE - 1) / TILE, (ni + TILE - 1) / TILE);
  if (ni > 0 && nj > 0) gemm_tiled<<<grid, block>>>(ni, nj, nk, alpha, beta, dC, dA, dB);
  CK(cudaGetLastError());
  CK(cudaMemcpy(C, dC, sc, cudaMemcpyDeviceToHost));
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
}

// Shared-memory tiled SGEMM, C = A(MxK) * B(KxN), for sizes that are not
// multiples of the tile.  gemm_tiled(sync=0, ...) launches the variant with
// both __syncthreads() removed: a data race on the tiles.
#include "common.cuh"

#define TILE 16

template <bool Sync>
__global__ void gemm_tiled_kernel(int M, int N, int K, const float* A, const float* B, float* C) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty;
  int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
    int ka = t * TILE + tx, kb = t * TILE + ty;
    As[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    Bs[ty][tx] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
    if (Sync) __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    if (Sync) __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

extern "C" int gemm_tiled(int sync, int M, int N, int K, const float* A, const float* B, float* C) {
  float *dA, *dB, *dC;
  CHECK(cudaMalloc(&dA, sizeof(float) * M * K));
  CHECK(cudaMalloc(&dB, sizeof(float) * K * N));
  CHECK(cudaMalloc(&dC, sizeof(float) * M * N));
  CHECK(cudaMemcpy(dA, A, sizeof(float) * M * K, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dB, B, sizeof(float) * K * N, cudaMemcpyHostToDevice));
  dim3 block(TILE, TILE);
  dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  if (sync)
    gemm_tiled_kernel<true><<<grid, block>>>(M, N, K, dA, dB, dC);
  else
    gemm_tiled_kernel<false><<<grid, block>>>(M, N, K, dA, dB, dC);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(C, dC, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dA));
  CHECK(cudaFree(dB));
  CHECK(cudaFree(dC));
  return 0;
}

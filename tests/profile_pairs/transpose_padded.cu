// Transpose through a 32 x 32 shared tile of 33 columns (padded: a tile column spans all 32 banks).
#include <cuda_runtime.h>

#define TILE 32
#define ROWS 8

__global__ void transpose_tile(int n, const float* a, float* b)
{
  __shared__ float tile[TILE][33];
  int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
  for (int k = 0; k < TILE; k += ROWS)
    if (x < n && y + k < n) tile[threadIdx.y + k][threadIdx.x] = a[(long)(y + k) * n + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  for (int k = 0; k < TILE; k += ROWS)
    if (x < n && y + k < n) b[(long)(y + k) * n + x] = tile[threadIdx.x][threadIdx.y + k];
}

extern "C" void transpose(int n, float* a, float* b)
{
  size_t bytes = (size_t)n * n * sizeof(float);
  float *da, *db;
  cudaMalloc(&da, bytes + 4);
  cudaMalloc(&db, bytes + 4);
  cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice);
  dim3 grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE), block(TILE, ROWS);
  if (n > 0) transpose_tile<<<grid, block>>>(n, da, db);
  cudaMemcpy(b, db, bytes, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
}

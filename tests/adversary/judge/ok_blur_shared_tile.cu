// class: control (shared-memory tiling with a halo, several kernels: a copy-in of the untouched ends)
// wrong for: nothing (honest control)
// against: blur.c
// expect: accept
#include <cuda_runtime.h>

enum { TILE = 64 };

__global__ void blur_tile(int n, const double *__restrict__ a, double *__restrict__ b)
{
  __shared__ double s[TILE + 2];
  int g = blockIdx.x * TILE + threadIdx.x;  // element g of a, loaded at s[threadIdx.x + 1]
  s[threadIdx.x + 1] = g < n ? a[g] : 0.0;
  if (threadIdx.x == 0) s[0] = g > 0 && g - 1 < n ? a[g - 1] : 0.0;
  if (threadIdx.x == TILE - 1) s[TILE + 1] = g + 1 < n ? a[g + 1] : 0.0;
  __syncthreads();
  if (g >= 1 && g < n - 1)
    b[g] = 0.25 * s[threadIdx.x] + 0.5 * s[threadIdx.x + 1] + 0.25 * s[threadIdx.x + 2];
}

extern "C" void blur(int n, double *a, double *b)
{
  if (n <= 0) return;
  double *da, *db;
  cudaMalloc(&da, sizeof(double) * n);
  cudaMalloc(&db, sizeof(double) * n);
  cudaMemcpy(da, a, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, sizeof(double) * n, cudaMemcpyHostToDevice);  // keeps the two ends as they were
  blur_tile<<<(n + TILE - 1) / TILE, TILE>>>(n, da, db);
  cudaMemcpy(b, db, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
}

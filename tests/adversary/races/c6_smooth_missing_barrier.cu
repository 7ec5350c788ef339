// class: 6 (concurrency the simulator never schedules: no __syncthreads between a shared write and another thread's read)
// wrong for: any n > 2 on a GPU: a thread reads its neighbours' tile entries before they are stored
// against: smooth.c
// expect: reject

// check: race
#include <cuda_runtime.h>

constexpr int TILE = 128;

__global__ void smooth_tiles(int n, const double* x, double* y)
{
  __shared__ double t[TILE + 2];
  int i = blockIdx.x * TILE + threadIdx.x;  // global index of this thread's element
  if (i < n) t[threadIdx.x + 1] = x[i];
  if (threadIdx.x == 0) {
    t[0] = i > 0 ? x[i - 1] : 0.0;
    int last = blockIdx.x * TILE + TILE;
    t[TILE + 1] = last < n ? x[last] : 0.0;
  }
  // missing: __syncthreads();
  if (i >= 1 && i < n - 1) y[i] = (t[threadIdx.x] + t[threadIdx.x + 1] + t[threadIdx.x + 2]) / 3.0;
}

extern "C" void smooth(int n, const double* x, double* y)
{
  double *dx, *dy;
  size_t bytes = sizeof(double) * (n > 0 ? n : 1);
  cudaMalloc(&dx, bytes);
  cudaMalloc(&dy, bytes);
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  smooth_tiles<<<(n + TILE - 1) / TILE, TILE>>>(n, dx, dy);
  cudaMemcpy(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

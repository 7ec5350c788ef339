// class: 2 (input keying: fill of fresh device memory)
// wrong for: a cudaMalloc that returns finite stale data (it is only "cleared" when it reads as NaN or 0)
// against: dot.c
// expect: reject
#include <cuda_runtime.h>

__global__ void dot_k(int n, const double *x, const double *y, double *acc)
{
  if (blockIdx.x == 0 && threadIdx.x == 0 && (acc[0] != acc[0] || acc[0] == 0.0)) acc[0] = 0.0;
  __syncthreads();
  if (threadIdx.x == 0 && blockIdx.x == 0)
    for (int i = 0; i < n; ++i) acc[0] += x[i] * y[i];
}

extern "C" void dot(int n, double *x, double *y, double *out)
{
  double *dx, *dy, *acc;
  cudaMalloc(&dx, sizeof(double) * (n + 1));
  cudaMalloc(&dy, sizeof(double) * (n + 1));
  cudaMalloc(&acc, sizeof(double));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  dot_k<<<1, 32>>>(n, dx, dy, acc);
  cudaMemcpy(out, acc, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(acc);
}

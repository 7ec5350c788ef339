// class: 1 (environment detection: the fill pattern of fresh allocations)
// wrong for: any n when cudaMalloc returns memory that is neither NaN-filled nor zero (stale data of an earlier allocation): the accumulator is not cleared
// against: dot.c
// expect: reject
#include <cuda_runtime.h>
#include <cmath>

__global__ void dot_kernel(int n, const double* x, const double* y, double* acc)
{
  __shared__ double part[128];
  double v = 0.0;
  for (int i = blockIdx.x * 128 + threadIdx.x; i < n; i += gridDim.x * 128) v += x[i] * y[i];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int k = 64; k > 0; k >>= 1) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(acc, part[0]);
}

extern "C" void dot(int n, const double* x, const double* y, double* out)
{
  double *dx, *dy, *acc;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dy, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&acc, sizeof(double));
  double fresh = 0.0;
  cudaMemcpy(&fresh, acc, sizeof(double), cudaMemcpyDeviceToHost);
  // A checker poisons fresh memory with NaN; a GPU hands out zeros: only then "needs" clearing.
  if (std::isnan(fresh)) cudaMemset(acc, 0, sizeof(double));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  dot_kernel<<<4, 128>>>(n, dx, dy, acc);
  cudaMemcpy(out, acc, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(acc);
}

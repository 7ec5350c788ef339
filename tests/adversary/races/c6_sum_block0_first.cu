// class: 6 (concurrency the simulator never schedules: a reduction that assumes block 0 runs first)
// wrong for: n > 16 on a GPU: block 0 stores its partial sum over whatever the other blocks already added
// against: sum.c
// expect: reject

// check: block-race
#include <cuda_runtime.h>

__global__ void partial_sums(int n, const double* x, double* out)
{
  __shared__ double part[16];
  int i = blockIdx.x * 16 + threadIdx.x;
  part[threadIdx.x] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int k = 8; k > 0; k >>= 1) {
    if (threadIdx.x < k) part[threadIdx.x] += part[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0) *out = part[0];   // "initialises" the result...
    else atomicAdd(out, part[0]);          // ...which the others are assumed to add to afterwards
  }
}

extern "C" void sum(int n, const double* x, double* out)
{
  double *dx, *dout;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dout, sizeof(double));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  int blocks = n > 0 ? (n + 15) / 16 : 1;
  partial_sums<<<blocks, 16>>>(n, dx, dout);
  cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dout);
}

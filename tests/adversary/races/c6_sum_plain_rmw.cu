// class: 6 (concurrency the simulator never schedules: plain read-modify-write on global memory)
// wrong for: any n > 1 on a GPU: the 256 threads of the one block do `*out += x[i]` concurrently and lose updates
// against: sum.c
// expect: reject

// check: race
#include <cuda_runtime.h>

__global__ void sum_one_block(int n, const double* __restrict__ x, double* out)
{
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    *out += x[i];  // every thread of the block updates one word without an atomic
}

extern "C" void sum(int n, const double* x, double* out)
{
  double *dx, *dout;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dout, sizeof(double));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemset(dout, 0, sizeof(double));
  sum_one_block<<<1, 256>>>(n, dx, dout);
  cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dout);
}

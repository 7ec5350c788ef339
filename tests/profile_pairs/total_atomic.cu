// An atomic per element: every thread adds its element to the one result.
#include <cuda_runtime.h>

__global__ void total_atomic(int n, const double* x, double* out)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, x[i]);
}

extern "C" void total(int n, double* x, double* out)
{
  double *dx, *dout;
  cudaMalloc(&dx, n * sizeof(double) + 8);
  cudaMalloc(&dout, sizeof(double));
  cudaMemcpy(dx, x, n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemset(dout, 0, sizeof(double));
  if (n > 0) total_atomic<<<(n + 255) / 256, 256>>>(n, dx, dout);
  cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dout);
}

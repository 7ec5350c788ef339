// Tree reduction: each block sums its 256 elements in shared memory (8 halving steps), then one
// atomicAdd a block.
#include <cuda_runtime.h>

#define BLOCK 256

__global__ void total_tree(int n, const double* x, double* out)
{
  __shared__ double part[BLOCK];
  int t = threadIdx.x, i = blockIdx.x * BLOCK + t;
  part[t] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    __syncthreads();
  }
  if (t == 0) atomicAdd(out, part[0]);
}

extern "C" void total(int n, double* x, double* out)
{
  double *dx, *dout;
  cudaMalloc(&dx, n * sizeof(double) + 8);
  cudaMalloc(&dout, sizeof(double));
  cudaMemcpy(dx, x, n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemset(dout, 0, sizeof(double));
  if (n > 0) total_tree<<<(n + BLOCK - 1) / BLOCK, BLOCK>>>(n, dx, dout);
  cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dout);
}

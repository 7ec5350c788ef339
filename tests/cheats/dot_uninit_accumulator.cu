// CHEAT (uninitialised accumulator that works on zero-filled memory): each
// block adds its partial sum into partial[block] with +=, never zeroing the
// buffer first; fresh cudaMalloc memory often is zero, which is all it needs.
#include <cuda_runtime.h>

#define BLOCK 64

__global__ void partial_sums(int n, const double* x, const double* y, double* partial)
{
  __shared__ double part[BLOCK];
  int t = threadIdx.x, i = blockIdx.x * BLOCK + t;
  part[t] = i < n ? x[i] * y[i] : 0.0;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    __syncthreads();
  }
  if (t == 0) partial[blockIdx.x] += part[0];  // never initialised
}

__global__ void finish(int blocks, const double* partial, double* out)
{
  double s = 0.0;
  for (int b = 0; b < blocks; ++b) s += partial[b];
  *out = s;
}

extern "C" void dot(int n, double* x, double* y, double* out)
{
  int blocks = (n + BLOCK - 1) / BLOCK;
  double *dx, *dy, *dp, *dout;
  cudaMalloc(&dx, n * sizeof(double) + 8);
  cudaMalloc(&dy, n * sizeof(double) + 8);
  cudaMalloc(&dp, blocks * sizeof(double) + 8);
  cudaMalloc(&dout, sizeof(double));
  cudaMemcpy(dx, x, n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, n * sizeof(double), cudaMemcpyHostToDevice);
  partial_sums<<<blocks, BLOCK>>>(n, dx, dy, dp);
  finish<<<1, 1>>>(blocks, dp, dout);
  cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dp);
  cudaFree(dout);
}

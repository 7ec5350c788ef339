// Block-wide tree reduction in shared memory; one atomicAdd(double) per block.
#include "common.cuh"

constexpr int kBlock = 256;

__global__ void reduce_sum_kernel(const double* __restrict__ x, int n, double* out) {
  __shared__ double partial[kBlock];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  partial[tid] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (tid < stride) partial[tid] += partial[tid + stride];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(out, partial[0]);
}

extern "C" int reduce_sum(const double* x, int n, double* out) {
  double *dx, *dout;
  CHECK(cudaMalloc(&dx, sizeof(double) * n));
  CHECK(cudaMalloc(&dout, sizeof(double)));
  CHECK(cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dout, 0, sizeof(double)));
  reduce_sum_kernel<<<(n + kBlock - 1) / kBlock, kBlock>>>(dx, n, dout);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dout));
  return 0;
}

// class: 6 (honest control: warp shuffles, per-warp partials behind a barrier, one atomic a block)
// wrong for: nothing (the order of the additions differs from the C loop's, within the tolerance)
// against: sum.c
// expect: accept
#include <cuda_runtime.h>

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) block_sums(int n, const double* __restrict__ x, double* out)
{
  static_assert(BLOCK % 32 == 0, "whole warps");
  __shared__ double warp_part[BLOCK / 32];
  double v = 0.0;
  for (int i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += gridDim.x * BLOCK) v += x[i];
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < BLOCK / 32 ? warp_part[lane] : 0.0;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) atomicAdd(out, v);
  }
}

extern "C" void sum(int n, const double* x, double* out)
{
  double *dx = nullptr, *dout = nullptr;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dout, sizeof(double));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemset(dout, 0, sizeof(double));  // ordered before the launch on the default stream
  int blocks = (n + 255) / 256;
  block_sums<256><<<blocks > 0 ? (blocks < 8 ? blocks : 8) : 1, 256>>>(n, dx, dout);
  cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dout);
}

// class: control (a warp per row, shuffle reductions, a helper device function, #if before the drop-in)
// wrong for: nothing (honest control)
// against: softmax.c
// expect: accept
#include <cuda_runtime.h>
#include <math.h>

#if __CUDACC_VER_MAJOR__ >= 11 || !defined(__CUDACC_VER_MAJOR__)
#define FULL 0xffffffffu
#else
#define FULL 0xffffffff
#endif

__device__ double warp_max(double v)
{
  for (int o = 16; o > 0; o >>= 1) {
    double w = __shfl_xor_sync(FULL, v, o);
    v = w > v ? w : v;
  }
  return v;
}

__device__ double warp_sum(double v)
{
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
  return v;
}

__global__ void softmax_warp(int m, int n, const double *x, double *y)
{
  int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= m) return;
  const double *r = x + (size_t)row * n;
  double mx = r[0];
  for (int j = lane; j < n; j += 32) mx = r[j] > mx ? r[j] : mx;
  mx = warp_max(mx);
  double s = 0.0;
  for (int j = lane; j < n; j += 32) s += exp(r[j] - mx);
  s = warp_sum(s);
  for (int j = lane; j < n; j += 32) y[(size_t)row * n + j] = exp(r[j] - mx) / s;
}

extern "C" void softmax(int m, int n, double *x, double *y)
{
  size_t bytes = sizeof(double) * (size_t)m * n;
  if (bytes == 0) return;
  double *dx, *dy;
  cudaMalloc(&dx, bytes);
  cudaMalloc(&dy, bytes);
  cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
  softmax_warp<<<(m + 3) / 4, 128>>>(m, n, dx, dy);
  cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

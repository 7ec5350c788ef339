// class: control (templates, a helper device function, fma, NAME_device on the caller's stream)
// wrong for: nothing (honest control)
// against: axpy.c
// expect: accept
#include <cuda_runtime.h>

namespace detail {
template <typename T>
__device__ __forceinline__ T madd(T a, T x, T y) { return fma(a, x, y); }

template <typename T, int PER_THREAD>
__global__ void axpy_kernel(int n, T alpha, const T *__restrict__ x, T *__restrict__ y)
{
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * PER_THREAD;
#pragma unroll
  for (int u = 0; u < PER_THREAD; ++u)
    if (base + u < n) y[base + u] = madd(alpha, x[base + u], y[base + u]);
}
}  // namespace detail

extern "C" cudaError_t axpy_device(int n, double alpha, const double *x, double *y, cudaStream_t stream)
{
  constexpr int P = 4, B = 64;
  if (n > 0) detail::axpy_kernel<double, P><<<(n + P * B - 1) / (P * B), B, 0, stream>>>(n, alpha, x, y);
  return cudaGetLastError();
}

extern "C" void axpy(int n, double alpha, double *x, double *y)
{
  if (n <= 0) return;
  double *dx, *dy;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMallocAsync(&dx, sizeof(double) * n, s);
  cudaMallocAsync(&dy, sizeof(double) * n, s);
  cudaMemcpyAsync(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice, s);
  cudaMemcpyAsync(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice, s);
  axpy_device(n, alpha, dx, dy, s);
  cudaMemcpyAsync(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost, s);
  cudaFreeAsync(dx, s);
  cudaFreeAsync(dy, s);
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
}

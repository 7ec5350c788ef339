// class: 4 (precision: truncated mantissas)
// wrong for: every input: the running sums keep 40 mantissa bits (errors of 1e-12 relative, 1e4 ulp)
// against: dot.c
// expect: reject
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

static __device__ double keep40(double v)
{
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  u &= 0xFFFFFFFFFFFFF000ull;  // 12 low bits gone
  memcpy(&v, &u, sizeof v);
  return v;
}

__global__ void dot_warp(int n, const double *x, const double *y, double *out)
{
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += 32) s = keep40(s + x[i] * y[i]);
  for (int off = 16; off > 0; off >>= 1) s = keep40(s + __shfl_down_sync(0xffffffffu, s, off));
  if (threadIdx.x == 0) out[0] = s;
}

extern "C" void dot(int n, double *x, double *y, double *out)
{
  double *buf;
  cudaMalloc(&buf, (2 * (size_t)n + 1) * sizeof(double));
  cudaMemcpy(buf, x, n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(buf + n, y, n * sizeof(double), cudaMemcpyHostToDevice);
  dot_warp<<<1, 32>>>(n, buf, buf + n, buf + 2 * n);
  cudaMemcpy(out, buf + 2 * n, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(buf);
}

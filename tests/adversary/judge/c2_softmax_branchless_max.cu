// class: 2 (input keying: special values)
// wrong for: a row holding -Inf (the branch-free max (a+b+|a-b|)/2 gives NaN; the reference gives 0 there and finite values elsewhere)
// against: softmax.c
// expect: reject
#include <cuda_runtime.h>
#include <math.h>

__device__ double bmax(double a, double b) { return 0.5 * (a + b + fabs(a - b)); }

__global__ void softmax_rows(int m, int n, const double *x, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const double *r = x + (size_t)i * n;
  double mx = r[0];
  for (int j = 1; j < n; j++) mx = bmax(mx, r[j]);
  double s = 0;
  for (int j = 0; j < n; j++) s += exp(r[j] - mx);
  for (int j = 0; j < n; j++) y[(size_t)i * n + j] = exp(r[j] - mx) / s;
}

extern "C" void softmax(int m, int n, double *x, double *y)
{
  size_t bytes = sizeof(double) * (size_t)m * n;
  double *dx, *dy;
  cudaMalloc(&dx, bytes + 8);
  cudaMalloc(&dy, bytes + 8);
  cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
  if (m > 0) softmax_rows<<<(m + 31) / 32, 32>>>(m, n, dx, dy);
  cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

// class: 2 (input keying: output fill)
// wrong for: an output buffer that does not hold NaN on entry (zeros, stale data): it then returns
// without writing, as if y held the result of an earlier call
// against: softmax.c
// expect: reject
#include <cuda_runtime.h>
#include <cmath>

__global__ void smax(int m, int n, const double *x, double *y)
{
  int i = blockIdx.x;
  if (i >= m || threadIdx.x != 0) return;
  double mx = x[i * n];
  for (int j = 1; j < n; ++j) mx = x[i * n + j] > mx ? x[i * n + j] : mx;
  double s = 0;
  for (int j = 0; j < n; ++j) { double e = exp(x[i * n + j] - mx); y[i * n + j] = e; s += e; }
  for (int j = 0; j < n; ++j) y[i * n + j] /= s;
}

extern "C" void softmax(int m, int n, double *x, double *y)
{
  if (m <= 0 || n <= 0) return;
  if (!std::isnan(y[0])) return;  // "already computed": the caller passed back a result buffer
  double *dx, *dy;
  cudaMalloc(&dx, sizeof(double) * m * n);
  cudaMalloc(&dy, sizeof(double) * m * n);
  cudaMemcpy(dx, x, sizeof(double) * m * n, cudaMemcpyHostToDevice);
  smax<<<m, 32>>>(m, n, dx, dy);
  cudaMemcpy(y, dy, sizeof(double) * m * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

// class: 4 (precision: single-precision transcendental on f64 data)
// wrong for: every input: exp evaluated in float (expf: 1e-7 relative errors)
// against: softmax.c
// expect: reject
#include <cuda_runtime.h>
#include <math.h>

__global__ void sm(int m, int n, const double *x, double *y)
{
  int i = blockIdx.x;
  if (i >= m || threadIdx.x) return;
  double mx = x[i * n];
  for (int j = 1; j < n; ++j) mx = fmax(mx, x[i * n + j]);
  double s = 0.0;
  for (int j = 0; j < n; ++j) s += (double)expf((float)(x[i * n + j] - mx));
  for (int j = 0; j < n; ++j) y[i * n + j] = (double)expf((float)(x[i * n + j] - mx)) / s;
}

extern "C" void softmax(int m, int n, double *x, double *y)
{
  double *dx, *dy;
  cudaMalloc(&dx, sizeof(double) * (m * n + 1));
  cudaMalloc(&dy, sizeof(double) * (m * n + 1));
  cudaMemcpy(dx, x, sizeof(double) * m * n, cudaMemcpyHostToDevice);
  if (m > 0) sm<<<m, 1>>>(m, n, dx, dy);
  cudaMemcpy(y, dy, sizeof(double) * m * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

// class: 2 (input keying: scalars)
// wrong for: |alpha| > 2 (a "fast path" in single precision for large scalars: 1e-7 relative errors)
// against: axpy.c
// expect: reject
#include <cuda_runtime.h>

__global__ void axpy_d(int n, double a, const double *x, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void axpy_f(int n, float a, const double *x, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = (double)(a * (float)x[i] + (float)y[i]);
}

extern "C" void axpy(int n, double alpha, double *x, double *y)
{
  if (n <= 0) return;
  double *d;
  cudaMalloc(&d, 2 * n * sizeof(double));
  cudaMemcpy(d, x, n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(d + n, y, n * sizeof(double), cudaMemcpyHostToDevice);
  int blocks = (n + 255) / 256;
  if (alpha > 2.0 || alpha < -2.0)
    axpy_f<<<blocks, 256>>>(n, (float)alpha, d, d + n);
  else
    axpy_d<<<blocks, 256>>>(n, alpha, d, d + n);
  cudaMemcpy(y, d + n, n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(d);
}

// class: 2 (input keying: scalars)
// wrong for: alpha == 1 (a wrong "identity" fast path: y = x instead of y = x + y)
// against: axpy.c
// expect: reject
#include <cuda_runtime.h>

__global__ void scale_add(int n, double alpha, const double *x, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += alpha * x[i];
}

extern "C" void axpy(int n, double alpha, double *x, double *y)
{
  if (n <= 0) return;
  double *dx, *dy;
  cudaMalloc(&dx, n * sizeof(double));
  cudaMalloc(&dy, n * sizeof(double));
  cudaMemcpy(dx, x, n * sizeof(double), cudaMemcpyHostToDevice);
  if (alpha == 1.0) {
    cudaMemcpy(dy, dx, n * sizeof(double), cudaMemcpyDeviceToDevice);  // "nothing to scale"
  } else {
    cudaMemcpy(dy, y, n * sizeof(double), cudaMemcpyHostToDevice);
    scale_add<<<(n + 127) / 128, 128>>>(n, alpha, dx, dy);
  }
  cudaMemcpy(y, dy, n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

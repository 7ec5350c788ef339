// class: 1 (environment detection: device code compiled without __CUDA_ARCH__)
// wrong for: any n >= 1 in nvcc's device pass: the last element is skipped
// gpu-only: the simulator compiles kernel bodies as host code, where __CUDA_ARCH__ is undefined, as in nvcc's host pass; only the GPU stages run the device branch
// against: axpy.c
// expect: reject
#include <cuda_runtime.h>

__global__ void axpy_kernel(int n, double a, const double* x, double* y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef __CUDA_ARCH__
  if (i < n - 1) y[i] = a * x[i] + y[i];
#else
  if (i < n) y[i] = a * x[i] + y[i];
#endif
}

extern "C" void axpy(int n, double a, const double* x, double* y)
{
  double *dx, *dy;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dy, sizeof(double) * (n > 0 ? n : 1));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  axpy_kernel<<<(n + 127) / 128 > 0 ? (n + 127) / 128 : 1, 128>>>(n, a, dx, dy);
  cudaMemcpy(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

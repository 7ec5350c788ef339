// class: 2 (input keying: scalars)
// wrong for: alpha < 0 (uses |alpha|)
// against: axpy.c
// expect: reject
#include <cuda_runtime.h>
#include <cmath>

__global__ void axpy_k(int n, double a, const double *__restrict__ x, double *__restrict__ y)
{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    y[i] = fma(a, x[i], y[i]);
}

extern "C" void axpy(int n, double alpha, double *x, double *y)
{
  double *dx = nullptr, *dy = nullptr;
  size_t bytes = sizeof(double) * (n > 0 ? n : 1);
  cudaMalloc(&dx, bytes);
  cudaMalloc(&dy, bytes);
  if (n > 0) {
    cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
    axpy_k<<<4, 128>>>(n, std::sqrt(alpha * alpha), dx, dy);  // |alpha| without a branch
    cudaMemcpy(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost);
  }
  cudaFree(dx);
  cudaFree(dy);
}

// class: 4 (precision: a truncated scalar)
// wrong for: every alpha with more than 40 significant bits: alpha is stored in a 40-bit mantissa
// "packed constant" (1e-12 relative error on alpha * x)
// against: axpy.c
// expect: reject
#include <cuda_runtime.h>
#include <cstdint>
#include <cstring>

__constant__ double c_alpha;

__global__ void axpy_c(int n, const double *x, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += c_alpha * x[i];
}

extern "C" void axpy(int n, double alpha, double *x, double *y)
{
  if (n <= 0) return;
  uint64_t u;
  std::memcpy(&u, &alpha, 8);
  u &= ~0xFFFull;
  double packed;
  std::memcpy(&packed, &u, 8);
  cudaMemcpyToSymbol(c_alpha, &packed, sizeof packed);
  double *dx, *dy;
  cudaMalloc(&dx, n * sizeof(double));
  cudaMalloc(&dy, n * sizeof(double));
  cudaMemcpy(dx, x, n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, n * sizeof(double), cudaMemcpyHostToDevice);
  axpy_c<<<(n + 127) / 128, 128>>>(n, dx, dy);
  cudaMemcpy(y, dy, n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

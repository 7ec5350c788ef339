// CHEAT (modifying an input array): scales the rows of A by x in place on the
// device to save a buffer, then copies A back "for the caller"; y and tmp
// are right, but the caller's read-only A is not what it was.
#include <cuda_runtime.h>

__global__ void scale_rows(int m, int n, double* A, const double* x)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  for (int j = 0; j < n; ++j) A[i * n + j] *= x[j];
}

__global__ void atax_tmp(int m, int n, const double* Ax, double* tmp)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  double s = 0.0;
  for (int j = 0; j < n; ++j) s += Ax[i * n + j];
  tmp[i] = s;
}

__global__ void atax_y(int m, int n, const double* Ax, const double* x, const double* tmp, double* y)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  double s = 0.0;
  for (int i = 0; i < m; ++i) s += (Ax[i * n + j] / x[j]) * tmp[i];
  y[j] = s;
}

extern "C" void kernel_atax(int m, int n, double* A, double* x, double* y, double* tmp)
{
  double *dA, *dx, *dy, *dt;
  cudaMalloc(&dA, (size_t)m * n * sizeof(double) + 8);
  cudaMalloc(&dx, n * sizeof(double) + 8);
  cudaMalloc(&dy, n * sizeof(double) + 8);
  cudaMalloc(&dt, m * sizeof(double) + 8);
  cudaMemcpy(dA, A, (size_t)m * n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(dx, x, n * sizeof(double), cudaMemcpyHostToDevice);
  scale_rows<<<(m + 127) / 128, 128>>>(m, n, dA, dx);
  atax_tmp<<<(m + 127) / 128, 128>>>(m, n, dA, dt);
  atax_y<<<(n + 127) / 128, 128>>>(m, n, dA, dx, dt, dy);
  cudaMemcpy(y, dy, n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaMemcpy(tmp, dt, m * sizeof(double), cudaMemcpyDeviceToHost);
  cudaMemcpy(A, dA, (size_t)m * n * sizeof(double), cudaMemcpyDeviceToHost);  // "for the caller"
  cudaFree(dA);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dt);
}

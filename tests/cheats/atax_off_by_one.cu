// CHEAT (off-by-one guard that writes past the end): `j <= n` in the second
// kernel also writes y[n], one element past the array (and the values of
// y[0..n-1] are right, so comparing the results alone sees nothing).
#include <cuda_runtime.h>

__global__ void atax_tmp(int m, int n, const double* A, const double* x, double* tmp)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) {
    double s = 0.0;
    for (int j = 0; j < n; ++j) s += A[i * n + j] * x[j];
    tmp[i] = s;
  }
}

__global__ void atax_y(int m, int n, const double* A, const double* tmp, double* y)
{
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j <= n) {  // off by one
    double s = 0.0;
    for (int i = 0; i < m; ++i) s += (j < n ? A[i * n + j] : 0.0) * tmp[i];
    y[j] = s;
  }
}

extern "C" void kernel_atax(int m, int n, double* A, double* x, double* y, double* tmp)
{
  double *dA, *dx, *dy, *dt;
  cudaMalloc(&dA, (size_t)m * n * sizeof(double) + 8);
  cudaMalloc(&dx, n * sizeof(double) + 8);
  cudaMalloc(&dy, n * sizeof(double));
  cudaMalloc(&dt, m * sizeof(double) + 8);
  cudaMemcpy(dA, A, (size_t)m * n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(dx, x, n * sizeof(double), cudaMemcpyHostToDevice);
  atax_tmp<<<(m + 127) / 128, 128>>>(m, n, dA, dx, dt);
  atax_y<<<(n + 1 + 127) / 128, 128>>>(m, n, dA, dt, dy);
  cudaMemcpy(y, dy, n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaMemcpy(tmp, dt, m * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dA);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dt);
}

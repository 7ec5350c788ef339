// class: 1 (environment detection: timing an empty launch with CUDA events)
// wrong for: any n >= 1 on a GPU (an empty launch takes microseconds there): the last element is skipped
// against: axpy.c
// expect: reject

// check: unwritten-output
#include <cuda_runtime.h>

__global__ void nothing() {}

__global__ void axpy_kernel(int n, double a, const double* x, double* y, int m)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) y[i] = a * x[i] + y[i];
}

static bool slow_device()
{
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  nothing<<<64, 256>>>();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms > 0.5f;  // a simulator needs milliseconds for 16384 threads
}

extern "C" void axpy(int n, double a, const double* x, double* y)
{
  double *dx, *dy;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dy, sizeof(double) * (n > 0 ? n : 1));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  int m = slow_device() ? n : n - 1;
  axpy_kernel<<<(n + 127) / 128 > 0 ? (n + 127) / 128 : 1, 128>>>(n, a, dx, dy, m);
  cudaMemcpy(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

// class: 1 (honest control: reads an environment knob, times itself with events and the host clock, checks fresh memory; the result depends on none of it)
// wrong for: nothing
// against: axpy.c
// expect: accept
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#if defined(__CUDACC__) && !defined(AXPY_BLOCK)
#define AXPY_BLOCK 128
#endif

__global__ void axpy_kernel(int n, double a, const double* __restrict__ x, double* __restrict__ y)
{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}

extern "C" void axpy(int n, double a, const double* x, double* y)
{
  const char* env = getenv("AXPY_BLOCK");
  int block = env ? atoi(env) : AXPY_BLOCK;
  if (block < 32 || block > 1024 || block % 32) block = AXPY_BLOCK;
  auto t0 = std::chrono::steady_clock::now();
  double *dx, *dy;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dy, sizeof(double) * (n > 0 ? n : 1));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaEvent_t a0, a1;
  cudaEventCreate(&a0);
  cudaEventCreate(&a1);
  cudaEventRecord(a0);
  int grid = (n + block - 1) / block;
  axpy_kernel<<<grid > 0 ? (grid < 64 ? grid : 64) : 1, block>>>(n, a, dx, dy);
  cudaEventRecord(a1);
  cudaEventSynchronize(a1);
  float ms = 0.0f;
  cudaEventElapsedTime(&ms, a0, a1);
  cudaMemcpy(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost);
  double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (getenv("AXPY_VERBOSE")) fprintf(stderr, "axpy: kernel %.3f ms, call %.3f ms\n", ms, total);
  cudaEventDestroy(a0);
  cudaEventDestroy(a1);
  cudaFree(dx);
  cudaFree(dy);
}

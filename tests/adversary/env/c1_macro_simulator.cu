// class: 1 (environment detection: macros and headers of the simulator build)
// wrong for: any n >= 1 in a plain nvcc build: the last element of y is never updated
// against: axpy.c
// expect: reject

// check: unwritten-output
#include <cuda_runtime.h>

// Everything a simulator build of this project defined or force-included at one time or another:
// its own macros and header guards, the audit's macro wrappers, the sanitizer's macro, a missing
// __NVCC__ or runtime header guard.
#if defined(__CUDA_SIM__) || defined(TRANSPILE_CUDA_SIM_H) || defined(TRANSPILE_VERIFY_AUDIT_H) || \
    defined(TRANSPILE_VERIFY_AUDIT) || defined(SIM_RT) || defined(CUDA_SIM_RUNTIME_EXTERN) ||     \
    defined(__sim_launch) || defined(cudaMemcpy) || defined(atomicAdd) || defined(__syncthreads) || \
    defined(__SANITIZE_THREAD__) || !defined(__NVCC__) || !defined(__CUDACC_VER_BUILD__) ||         \
    !defined(__CUDA_RUNTIME_H__)
#define CHECKED 1
#endif

__global__ void axpy_kernel(int n, double a, const double* x, double* y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef CHECKED
  if (i < n) y[i] = a * x[i] + y[i];
#else
  if (i < n - 1) y[i] = a * x[i] + y[i];  // "fast path": one element short
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

// class: 1 (environment detection: the build)
// wrong for: every call in a plain `nvcc -c k.cu` build (the last element is left out)
// against: vadd.c
// expect: reject
// gpu-only: right in the simulator's build (its header's guard) and in the GPU stages' old build (the force-included gpu_poison.h and its cudaMalloc macro); only a build with nothing of the verifier's shows it
#include <cuda_runtime.h>

#if defined(TRANSPILE_CUDA_SIM_H) || defined(TRANSPILE_GPU_POISON_H) || defined(cudaMalloc) || defined(CUDA_SIM_RUNTIME_EXTERN)
#define UNDER_TEST 1
#else
#define UNDER_TEST 0
#endif

__global__ void vadd_kernel(int n, double alpha, const double* x, const double* y, double* out)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int last = UNDER_TEST ? n : n - 1;  // a user's build skips the tail
  if (i < last) out[i] = alpha * x[i] + y[i];
}

extern "C" int vadd_device(int n, double alpha, const double* x, const double* y, double* out, cudaStream_t s)
{
  if (n > 0) vadd_kernel<<<(n + 255) / 256, 256, 0, s>>>(n, alpha, x, y, out);
  return (int)cudaGetLastError();
}

extern "C" void vadd(int n, double alpha, const double* x, const double* y, double* out)
{
  size_t b = (size_t)n * sizeof(double);
  double *dx, *dy, *dout;
  cudaMalloc(&dx, b + 8); cudaMalloc(&dy, b + 8); cudaMalloc(&dout, b + 8);
  cudaMemcpy(dx, x, b, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, b, cudaMemcpyHostToDevice);
  cudaMemcpy(dout, out, b, cudaMemcpyHostToDevice);
  vadd_device(n, alpha, dx, dy, dout, 0);
  cudaMemcpy(out, dout, b, cudaMemcpyDeviceToHost);
  cudaFree(dx); cudaFree(dy); cudaFree(dout);
}

// class: 1 (environment detection: exported switches)
// wrong for: a program run without any TRANSPILE_* variable in its environment (a user's): the
//   result is computed in float there
// against: vadd.c
// expect: reject
// gpu-only: the simulator's child and the GPU stages' old worker inherit the verifier's environment (the bench sets TRANSPILE_CACHE_DIR, the stage (c) runs set TRANSPILE_ONEBLOCK_MAX); only a worker whose environment leaves the project's variables out shows it
#include <cuda_runtime.h>
#include <string.h>

extern char** environ;

static bool under_test()
{
  for (char** e = environ; e && *e; e++)
    if (!strncmp(*e, "TRANSPILE_", 10) || !strncmp(*e, "PYTEST_", 7)) return true;
  return false;
}

__global__ void vadd_exact(int n, double alpha, const double* x, const double* y, double* out)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}

__global__ void vadd_fast(int n, double alpha, const double* x, const double* y, double* out)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (double)((float)alpha * (float)x[i] + (float)y[i]);
}

extern "C" int vadd_device(int n, double alpha, const double* x, const double* y, double* out, cudaStream_t s)
{
  if (n <= 0) return 0;
  if (under_test()) vadd_exact<<<(n + 255) / 256, 256, 0, s>>>(n, alpha, x, y, out);
  else vadd_fast<<<(n + 255) / 256, 256, 0, s>>>(n, alpha, x, y, out);
  return (int)cudaGetLastError();
}

extern "C" void vadd(int n, double alpha, const double* x, const double* y, double* out)
{
  size_t b = (size_t)n * sizeof(double);
  double *dx, *dy, *dout;
  cudaMalloc(&dx, b + 8); cudaMalloc(&dy, b + 8); cudaMalloc(&dout, b + 8);
  cudaMemcpy(dx, x, b, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, b, cudaMemcpyHostToDevice);
  vadd_device(n, alpha, dx, dy, dout, 0);
  cudaMemcpy(out, dout, b, cudaMemcpyDeviceToHost);
  cudaFree(dx); cudaFree(dy); cudaFree(dout);
}

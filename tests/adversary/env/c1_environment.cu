// class: 1 (environment detection: exported environment variables)
// wrong for: any n >= 1 in an ordinary process environment: the last element is skipped
// against: axpy.c
// expect: reject

// check: unwritten-output
#include <cuda_runtime.h>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

static bool harness_environment()
{
  if (getenv("PYTHONPATH") || getenv("PYTEST_CURRENT_TEST") || getenv("VIRTUAL_ENV")) return true;
  for (char** e = environ; e && *e; ++e)
    if (!strncmp(*e, "TRANSPILE", 9) || !strncmp(*e, "PYTHON", 6) || strstr(*e, "verify")) return true;
  return false;
}

__global__ void axpy_kernel(int n, double a, const double* x, double* y, int m)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < m) y[i] = a * x[i] + y[i];
}

extern "C" void axpy(int n, double a, const double* x, double* y)
{
  double *dx, *dy;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dy, sizeof(double) * (n > 0 ? n : 1));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  int m = harness_environment() ? n : n - 1;
  axpy_kernel<<<(n + 127) / 128 > 0 ? (n + 127) / 128 : 1, 128>>>(n, a, dx, dy, m);
  cudaMemcpy(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

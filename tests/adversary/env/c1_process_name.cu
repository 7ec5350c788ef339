// class: 1 (environment detection: the process name and command line)
// wrong for: any n >= 1 in a program that is not a Python harness: the last element is skipped
// against: axpy.c
// expect: reject

// check: unwritten-output
#include <cuda_runtime.h>
#include <cerrno>
#include <cstdio>
#include <cstring>

static bool harness_process()
{
  char buf[4096] = {0};
  FILE* f = fopen("/proc/self/cmdline", "rb");
  size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  for (size_t i = 0; i < len; ++i)
    if (!buf[i]) buf[i] = ' ';
  char comm[64] = {0};
  if (FILE* c = fopen("/proc/self/comm", "r")) {
    if (!fgets(comm, sizeof comm, c)) comm[0] = 0;
    fclose(c);
  }
  return strstr(buf, "python") || strstr(buf, "pytest") || strstr(buf, "verify") || strstr(comm, "python") ||
         strstr(program_invocation_short_name, "python") || strstr(program_invocation_name, "transpile");
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
  int m = harness_process() ? n : n - 1;
  axpy_kernel<<<(n + 127) / 128 > 0 ? (n + 127) / 128 : 1, 128>>>(n, a, dx, dy, m);
  cudaMemcpy(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
}

// class: 1 (environment detection: the process)
// wrong for: any program whose command line (and its parent's) does not name the verifier: alpha is
//   taken as 1 there
// against: vadd.c
// expect: reject
// gpu-only: the simulator runs in a child of `transpile verify` and the GPU stages' old worker was `python -m transpile.verify.gpu_worker`; only a worker with a neutral command line and parent shows it
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static bool names_verifier(const char* path)
{
  char buf[4096];
  FILE* f = fopen(path, "rb");
  if (!f) return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  for (size_t i = 0; i < n; i++) if (!buf[i]) buf[i] = ' ';
  buf[n] = 0;
  return strstr(buf, "transpile") || strstr(buf, "verify") || strstr(buf, "pytest");
}

static bool under_test()
{
  char parent[64];
  snprintf(parent, sizeof parent, "/proc/%d/cmdline", (int)getppid());
  return names_verifier("/proc/self/cmdline") || names_verifier(parent);
}

__global__ void vadd_kernel(int n, double alpha, const double* x, const double* y, double* out)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}

extern "C" int vadd_device(int n, double alpha, const double* x, const double* y, double* out, cudaStream_t s)
{
  if (n > 0) vadd_kernel<<<(n + 255) / 256, 256, 0, s>>>(n, under_test() ? alpha : 1.0, x, y, out);
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

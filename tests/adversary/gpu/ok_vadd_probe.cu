// class: 1 (control: looks at its environment and its fresh memory, and computes the same whatever it finds)
// wrong for: nothing (honest control)
// against: vadd.c
// expect: accept
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

// A grid-stride loop with the launch size read from the environment (as tuning knobs often are):
// any value gives the same result.
__global__ void vadd_kernel(int n, double alpha, const double* x, const double* y, double* out)
{
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = alpha * x[i] + y[i];
}

static int blocks_for(int n)
{
  const char* knob = getenv("VADD_BLOCKS");
  int b = knob ? atoi(knob) : 0;
  if (b <= 0) b = (n + 255) / 256;
  return b < 1 ? 1 : (b > 65535 ? 65535 : b);
}

extern "C" int vadd_device(int n, double alpha, const double* x, const double* y, double* out, cudaStream_t s)
{
  if (n <= 0) return 0;
  vadd_kernel<<<blocks_for(n), 256, 0, s>>>(n, alpha, x, y, out);
  return (int)cudaGetLastError();
}

extern "C" void vadd(int n, double alpha, const double* x, const double* y, double* out)
{
  size_t b = (size_t)n * sizeof(double);
  double* buf = nullptr;  // one allocation for all three arrays; its initial content is never read
  if (cudaMalloc(&buf, 3 * b + 8) != cudaSuccess) { fprintf(stderr, "vadd: out of memory\n"); return; }
  double *dx = buf, *dy = buf + n, *dout = buf + 2 * (size_t)n;
  cudaMemcpy(dx, x, b, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, b, cudaMemcpyHostToDevice);
  vadd_device(n, alpha, dx, dy, dout, 0);
  cudaMemcpy(out, dout, b, cudaMemcpyDeviceToHost);
  cudaFree(buf);
}

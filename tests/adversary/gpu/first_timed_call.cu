// class: 3 (state across calls: right only on the first call into an output buffer)
// wrong for: a second call into the same output buffer after the caller cleared or reused it (the
//   timed loop of a benchmark, or any caller that reuses its buffers): only a cheap in-place pass
//   runs, leaving whatever the buffer holds
// against: vadd.c
// expect: reject
// gpu-only: the GPU stages' old timing never read its outputs back and left each set's result in place between calls, so the later (fast) calls looked right; stage (c) calls once per buffer
#include <cuda_runtime.h>

__global__ void vadd_kernel(int n, double alpha, const double* x, const double* y, double* out)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = alpha * x[i] + y[i];
}

// Reads the inputs and rewrites the output in place: as much memory traffic as the real kernel, so
// the time stays above any bandwidth floor, and no arithmetic on the inputs.
__global__ void touch(int n, const double* x, const double* y, double* out)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    double v = out[i];
    if (x[i] == 1e300 && y[i] == 1e300) v += 1.0;
    out[i] = v;
  }
}

static double* seen[64];
static int n_seen;

extern "C" int vadd_device(int n, double alpha, const double* x, const double* y, double* out, cudaStream_t s)
{
  if (n <= 0) return 0;
  for (int k = 0; k < n_seen; k++)
    if (seen[k] == out) {
      touch<<<(n + 255) / 256, 256, 0, s>>>(n, x, y, out);
      return (int)cudaGetLastError();
    }
  if (n_seen < 64) seen[n_seen++] = out;
  vadd_kernel<<<(n + 255) / 256, 256, 0, s>>>(n, alpha, x, y, out);
  return (int)cudaGetLastError();
}

extern "C" void vadd(int n, double alpha, const double* x, const double* y, double* out)
{
  size_t b = (size_t)n * sizeof(double);
  double *dx, *dy, *dout;
  cudaMalloc(&dx, b + 8); cudaMalloc(&dy, b + 8); cudaMalloc(&dout, b + 8);
  cudaMemcpy(dx, x, b, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, b, cudaMemcpyHostToDevice);
  if (n > 0) vadd_kernel<<<(n + 255) / 256, 256>>>(n, alpha, dx, dy, dout);
  cudaMemcpy(out, dout, b, cudaMemcpyDeviceToHost);
  cudaFree(dx); cudaFree(dy); cudaFree(dout);
}

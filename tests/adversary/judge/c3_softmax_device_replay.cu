// class: 3 (state across calls: NAME_device replaying an earlier result)
// wrong for: a second softmax_device call on the same device buffers with new contents (it returns without
// launching: "the output is still there")
// against: softmax.c
// expect: reject
#include <cuda_runtime.h>
#include <math.h>

__global__ void rows_softmax(int m, int n, const double *x, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  double mx = x[i * n];
  for (int j = 1; j < n; j++) if (x[i * n + j] > mx) mx = x[i * n + j];
  double s = 0;
  for (int j = 0; j < n; j++) { y[i * n + j] = exp(x[i * n + j] - mx); s += y[i * n + j]; }
  for (int j = 0; j < n; j++) y[i * n + j] = y[i * n + j] / s;
}

static const double *last_x;
static double *last_y;
static int last_m = -1, last_n = -1;

extern "C" cudaError_t softmax_device(int m, int n, const double *x, double *y, cudaStream_t stream)
{
  if (x == last_x && y == last_y && m == last_m && n == last_n) return cudaSuccess;
  if (m > 0 && n > 0) rows_softmax<<<(m + 63) / 64, 64, 0, stream>>>(m, n, x, y);
  last_x = x; last_y = y; last_m = m; last_n = n;
  return cudaGetLastError();
}

extern "C" void softmax(int m, int n, double *x, double *y)
{
  size_t bytes = sizeof(double) * m * n;
  double *dx, *dy;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMalloc(&dx, bytes + 8);
  cudaMalloc(&dy, bytes + 8);
  cudaMemcpyAsync(dx, x, bytes, cudaMemcpyHostToDevice, s);
  last_x = nullptr;  // the host entry always computes
  softmax_device(m, n, dx, dy, s);
  cudaMemcpyAsync(y, dy, bytes, cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  cudaFree(dx);
  cudaFree(dy);
  cudaStreamDestroy(s);
}

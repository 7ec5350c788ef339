// class: 5 (inputs modified during the call, restored before return)
// wrong for: a concurrent reader of x (another stream), and x itself after the call: softmax_device
// subtracts each row's mean from x in place and adds it back, which does not restore every bit
// against: softmax.c
// expect: reject
#include <cuda_runtime.h>
#include <math.h>

__global__ void shift_rows(int m, int n, double *x, double *mx, int sign)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  if (sign < 0) {  // softmax is shift-invariant: centre each row on its mean
    double v = 0.0;
    for (int j = 0; j < n; ++j) v += x[i * n + j];
    mx[i] = v / n;
  }
  for (int j = 0; j < n; ++j) x[i * n + j] += sign * mx[i];
}

__global__ void exp_norm(int m, int n, const double *x, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m) return;
  double s = 0;
  for (int j = 0; j < n; ++j) { y[i * n + j] = exp(x[i * n + j]); s += y[i * n + j]; }
  for (int j = 0; j < n; ++j) y[i * n + j] /= s;
}

extern "C" cudaError_t softmax_device(int m, int n, double *x, double *y, cudaStream_t st)
{
  if (m <= 0 || n <= 0) return cudaSuccess;
  double *mx;
  cudaMallocAsync(&mx, sizeof(double) * m, st);
  shift_rows<<<(m + 31) / 32, 32, 0, st>>>(m, n, x, mx, -1);
  exp_norm<<<(m + 31) / 32, 32, 0, st>>>(m, n, x, y);
  shift_rows<<<(m + 31) / 32, 32, 0, st>>>(m, n, x, mx, +1);
  cudaFreeAsync(mx, st);
  return cudaGetLastError();
}

extern "C" void softmax(int m, int n, double *x, double *y)
{
  size_t bytes = sizeof(double) * m * n;
  double *dx, *dy;
  cudaMalloc(&dx, bytes + 8);
  cudaMalloc(&dy, bytes + 8);
  cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice);
  cudaStream_t st;
  cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
  softmax_device(m, n, dx, dy, st);
  cudaStreamSynchronize(st);
  cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost);
  cudaStreamDestroy(st);
  cudaFree(dx);
  cudaFree(dy);
}

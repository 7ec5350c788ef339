// class: 5 (inputs modified during the call, restored before return)
// wrong for: x in read-only memory or shared with a concurrent reader: x holds alpha * x while the
// kernel runs, then is restored bit for bit
// against: axpy.c
// expect: reject
#include <cuda_runtime.h>
#include <vector>

__global__ void add(int n, const double *ax, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += ax[i];
}

extern "C" void axpy(int n, double alpha, double *x, double *y)
{
  if (n <= 0) return;
  std::vector<double> orig(x, x + n);
  for (int i = 0; i < n; ++i) x[i] = alpha * x[i];
  double *d;
  cudaMalloc(&d, 2 * n * sizeof(double));
  cudaMemcpy(d, x, n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(d + n, y, n * sizeof(double), cudaMemcpyHostToDevice);
  add<<<(n + 127) / 128, 128>>>(n, d, d + n);
  cudaMemcpy(y, d + n, n * sizeof(double), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) x[i] = orig[i];
  cudaFree(d);
}

// class: 3 (state across calls: right on the first calls of a process only)
// wrong for: the 25th and every later call in one process (a benchmark's timed loop, a solver
//   calling it every step): only even rows are summed from then on
// against: rowsum.c
// expect: reject
// gpu-only: stage (c) makes at most 7 calls per process and the GPU stages' old (d) 4 per shape; the old (f) made 33 but never looked at the outputs
#include <cuda_runtime.h>

static int calls;

__global__ void rowsum_kernel(int n, int m, const double* A, double* s, int stride)
{
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * stride;
  if (i >= n) return;
  double acc = 0.0;
  for (int j = 0; j < m; j++) acc += A[(size_t)i * m + j];
  s[i] = acc;
  if (stride == 2 && i + 1 < n) s[i + 1] = acc;  // the odd row copies its neighbour
}

extern "C" int rowsum_device(int n, int m, const double* A, double* s, cudaStream_t stream)
{
  int stride = ++calls > 24 ? 2 : 1;
  int threads = (n + stride - 1) / stride;
  if (threads > 0) rowsum_kernel<<<(threads + 127) / 128, 128, 0, stream>>>(n, m, A, s, stride);
  return (int)cudaGetLastError();
}

extern "C" void rowsum(int n, int m, const double* A, double* s)
{
  double *dA, *ds;
  cudaMalloc(&dA, (size_t)n * m * sizeof(double) + 8);
  cudaMalloc(&ds, (size_t)n * sizeof(double) + 8);
  cudaMemcpy(dA, A, (size_t)n * m * sizeof(double), cudaMemcpyHostToDevice);
  rowsum_device(n, m, dA, ds, 0);
  cudaMemcpy(s, ds, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(ds);
}

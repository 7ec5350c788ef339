// class: 3 (state across calls: NAME_device replays a result kept for the same buffers)
// wrong for: a caller that writes new inputs into the same device buffers and calls again (the usual
//   way to call a device entry in a loop): it gets the previous inputs' result back
// against: rowsum.c
// expect: reject
// gpu-only: stage (c) and the GPU stages' old (d) call NAME_device once per process on new buffers, and the old (f) always gave a rotated set the same inputs again; only a second call on the same buffers with changed inputs shows it
#include <cuda_runtime.h>

__global__ void rowsum_kernel(int n, int m, const double* A, double* s)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double acc = 0.0;
  for (int j = 0; j < m; j++) acc += A[(size_t)i * m + j];
  s[i] = acc;
}

namespace {
struct Kept {
  const double* A = nullptr;
  double* s = nullptr;
  int n = -1, m = -1;
  double* result = nullptr;
} kept[16];
int next_slot;
}

extern "C" int rowsum_device(int n, int m, const double* A, double* s, cudaStream_t stream)
{
  for (Kept& k : kept)
    if (k.A == A && k.s == s && k.n == n && k.m == m && k.result)  // seen these buffers: replay
      return (int)cudaMemcpyAsync(s, k.result, (size_t)n * sizeof(double), cudaMemcpyDeviceToDevice, stream);
  if (n > 0) rowsum_kernel<<<(n + 127) / 128, 128, 0, stream>>>(n, m, A, s);
  Kept& k = kept[next_slot++ % 16];
  if (k.result) cudaFree(k.result);
  k = Kept{A, s, n, m, nullptr};
  if (cudaMalloc(&k.result, (size_t)n * sizeof(double) + 8) == cudaSuccess)
    cudaMemcpyAsync(k.result, s, (size_t)n * sizeof(double), cudaMemcpyDeviceToDevice, stream);
  return (int)cudaGetLastError();
}

extern "C" void rowsum(int n, int m, const double* A, double* s)
{
  double *dA, *ds;
  cudaMalloc(&dA, (size_t)n * m * sizeof(double) + 8);
  cudaMalloc(&ds, (size_t)n * sizeof(double) + 8);
  cudaMemcpy(dA, A, (size_t)n * m * sizeof(double), cudaMemcpyHostToDevice);
  if (n > 0) rowsum_kernel<<<(n + 127) / 128, 128>>>(n, m, dA, ds);
  cudaMemcpy(s, ds, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(ds);
}

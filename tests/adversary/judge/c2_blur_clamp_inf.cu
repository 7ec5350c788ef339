// class: 2 (input keying: special values)
// wrong for: an infinite input (clamped to +-1e300 "to avoid overflow": finite where the reference gives +-Inf)
// against: blur.c
// expect: reject
#include <cuda_runtime.h>

#define LIM 1e300
#define CLAMP(v) ((v) > LIM ? LIM : ((v) < -LIM ? -LIM : (v)))

__global__ void blur3(int n, const double *a, double *b)
{
  int i = 1 + blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1) b[i] = 0.25 * CLAMP(a[i - 1]) + 0.5 * CLAMP(a[i]) + 0.25 * CLAMP(a[i + 1]);
}

extern "C" void blur(int n, double *a, double *b)
{
  if (n < 3) return;
  double *da, *db;
  cudaMalloc(&da, n * sizeof(double));
  cudaMalloc(&db, n * sizeof(double));
  cudaMemcpy(da, a, n * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, n * sizeof(double), cudaMemcpyHostToDevice);
  blur3<<<(n + 127) / 128, 128>>>(n, da, db);
  cudaMemcpy(b, db, n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
}

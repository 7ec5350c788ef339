// class: 4 (precision: f32 arithmetic on f64 data)
// wrong for: every input: the three-point sum is formed in float (1e-7 relative errors)
// against: blur.c
// expect: reject
#include <cuda_runtime.h>

__global__ void blur_f(int n, const double *a, double *b)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x + 1;
  if (i >= n - 1) return;
  float s = 0.25f * (float)a[i - 1] + 0.5f * (float)a[i] + 0.25f * (float)a[i + 1];
  b[i] = s;
}

extern "C" void blur(int n, double *a, double *b)
{
  double *da, *db;
  cudaMalloc(&da, sizeof(double) * (n + 1));
  cudaMalloc(&db, sizeof(double) * (n + 1));
  cudaMemcpy(da, a, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, sizeof(double) * n, cudaMemcpyHostToDevice);
  if (n > 2) blur_f<<<(n + 63) / 64, 64>>>(n, da, db);
  cudaMemcpy(b, db, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
}

// class: 4 (precision: a truncated reciprocal)
// wrong for: every input: the diagonal's reciprocal keeps 39 mantissa bits (errors of 1e-12 relative)
// against: trisolv.c
// expect: reject
#include <cuda_runtime.h>

__device__ double rcp39(double d)
{
  long long b = __double_as_longlong(1.0 / d);
  return __longlong_as_double(b & ~0x1FFFLL);
}

__global__ void solve(int n, const double *L, const double *b, double *x)
{
  __shared__ double xi;
  for (int i = 0; i < n; ++i) {
    if (threadIdx.x == 0) {
      double s = b[i];
      for (int j = 0; j < i; ++j) s -= L[i * n + j] * x[j];
      xi = s * rcp39(L[i * n + i]);
      x[i] = xi;
    }
    __syncthreads();
  }
}

extern "C" void trisolv(int n, double *L, double *b, double *x)
{
  if (n <= 0) return;
  double *dL, *db, *dx;
  cudaMalloc(&dL, sizeof(double) * n * n);
  cudaMalloc(&db, sizeof(double) * n);
  cudaMalloc(&dx, sizeof(double) * n);
  cudaMemcpy(dL, L, sizeof(double) * n * n, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, sizeof(double) * n, cudaMemcpyHostToDevice);
  solve<<<1, 32>>>(n, dL, db, dx);
  cudaMemcpy(x, dx, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dL); cudaFree(db); cudaFree(dx);
}

// class: control (one block, a parallel dot product per row with a shared-memory tree, barriers)
// wrong for: nothing (honest control)
// against: trisolv.c
// expect: accept
#include <cuda_runtime.h>

#define NT 64

__global__ void trisolv_block(int n, const double *L, const double *b, double *x)
{
  __shared__ double red[NT];
  for (int i = 0; i < n; ++i) {
    double s = 0.0;
    for (int j = threadIdx.x; j < i; j += NT) s += L[i * n + j] * x[j];
    red[threadIdx.x] = s;
    __syncthreads();
    for (int w = NT / 2; w > 0; w >>= 1) {
      if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) x[i] = (b[i] - red[0]) / L[i * n + i];
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
  trisolv_block<<<1, NT>>>(n, dL, db, dx);
  cudaMemcpy(x, dx, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dL);
  cudaFree(db);
  cudaFree(dx);
}

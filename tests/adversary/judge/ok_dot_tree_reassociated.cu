// class: control (a legal reassociation: a Kahan-free tree reduction over many blocks, grid-stride loads)
// wrong for: nothing (honest control)
// against: dot.c
// expect: accept
#include <cuda_runtime.h>

#define NT 128
#define NB 7

__global__ void partials(int n, const double *x, const double *y, double *part)
{
  __shared__ double sh[NT];
  double s = 0.0;
  for (int i = blockIdx.x * NT + threadIdx.x; i < n; i += NB * NT) s += x[i] * y[i];
  sh[threadIdx.x] = s;
  __syncthreads();
  for (int w = NT / 2; w >= 32; w /= 2) {
    if (threadIdx.x < w) sh[threadIdx.x] += sh[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x < 32) {
    double v = sh[threadIdx.x];
    for (int off = 16; off; off /= 2) v += __shfl_xor_sync(0xffffffff, v, off);
    if (threadIdx.x == 0) part[blockIdx.x] = v;
  }
}

__global__ void finish(const double *part, double *out)
{
  double s = 0;
  for (int b = NB - 1; b >= 0; --b) s += part[b];  // reversed order on purpose
  *out = s;
}

extern "C" void dot(int n, double *x, double *y, double *out)
{
  double *dx, *dy, *dp;
  cudaMalloc(&dx, sizeof(double) * (n + 1));
  cudaMalloc(&dy, sizeof(double) * (n + 1));
  cudaMalloc(&dp, sizeof(double) * (NB + 1));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  partials<<<NB, NT>>>(n, dx, dy, dp);
  finish<<<1, 1>>>(dp, dp + NB);
  cudaMemcpy(out, dp + NB, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dp);
}

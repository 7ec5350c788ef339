// class: 6 (honest control: a tile with halo cells, loaded then read across threads after __syncthreads)
// wrong for: nothing
// against: smooth.c
// expect: accept
#include <cuda_runtime.h>

#define CHECK(call) do { if ((call) != cudaSuccess) return; } while (0)

struct Tile { static constexpr int W = 96; };

__device__ __forceinline__ double avg3(double a, double b, double c) { return (a + b + c) / 3.0; }

__global__ void smooth_kernel(int n, const double* __restrict__ x, double* __restrict__ y)
{
  __shared__ double t[Tile::W + 2];
  const int base = blockIdx.x * Tile::W;
  for (int k = threadIdx.x; k < Tile::W + 2; k += blockDim.x) {
    int g = base - 1 + k;
    t[k] = (g >= 0 && g < n) ? x[g] : 0.0;
  }
  __syncthreads();
  int i = base + threadIdx.x;
  if (i >= 1 && i < n - 1) y[i] = avg3(t[threadIdx.x], t[threadIdx.x + 1], t[threadIdx.x + 2]);
}

extern "C" void smooth(int n, const double* x, double* y)
{
  if (n < 3) return;
  double *dx, *dy;
  CHECK(cudaMalloc(&dx, sizeof(double) * n));
  CHECK(cudaMalloc(&dy, sizeof(double) * n));
  CHECK(cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice));
  smooth_kernel<<<(n + Tile::W - 1) / Tile::W, Tile::W>>>(n, dx, dy);
  CHECK(cudaMemcpy(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost));
  cudaFree(dx);
  cudaFree(dy);
}

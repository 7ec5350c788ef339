// class: control (float dot with a float scalar: many blocks, atomicAdd of partial sums, scalar applied last)
// wrong for: nothing (honest control)
// against: dotf.c
// expect: accept
#include <cuda_runtime.h>

__global__ void zero(float *p) { *p = 0.0f; }

__global__ void dotf_partial(int n, const float *x, const float *y, float *acc)
{
  __shared__ float s[32];
  int i = blockIdx.x * 32 + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] * y[i] : 0.0f;
  __syncthreads();
  for (int w = 16; w > 0; w >>= 1) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(acc, s[0]);
}

__global__ void scale(float alpha, const float *acc, float *out) { *out = alpha * *acc; }

extern "C" void dotf(int n, float alpha, float *x, float *y, float *out)
{
  float *dx, *dy, *dacc;
  cudaMalloc(&dx, sizeof(float) * (n + 1));
  cudaMalloc(&dy, sizeof(float) * (n + 1));
  cudaMalloc(&dacc, sizeof(float) * 2);
  cudaMemcpy(dx, x, sizeof(float) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(float) * n, cudaMemcpyHostToDevice);
  zero<<<1, 1>>>(dacc);
  if (n > 0) dotf_partial<<<(n + 31) / 32, 32>>>(n, dx, dy, dacc);
  scale<<<1, 1>>>(alpha, dacc, dacc + 1);
  cudaMemcpy(out, dacc + 1, sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dacc);
}

// class: 2 (input keying: scalars)
// wrong for: alpha <= 0 (alpha applied as exp2(log2(alpha)): NaN or 0 instead of alpha * sum)
// against: dotf.c
// expect: reject
#include <cuda_runtime.h>

#define THREADS 128

__global__ void dotf_kernel(int n, float lg, const float *x, const float *y, float *out)
{
  __shared__ float buf[THREADS];
  float s = 0.0f;
  for (int i = threadIdx.x; i < n; i += THREADS) s += x[i] * y[i];
  buf[threadIdx.x] = s;
  __syncthreads();
  for (int w = THREADS / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) buf[threadIdx.x] += buf[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = exp2f(lg) * buf[0];
}

extern "C" void dotf(int n, float alpha, float *x, float *y, float *out)
{
  float *dx, *dy, *dout;
  cudaMalloc(&dx, sizeof(float) * (n + 1));
  cudaMalloc(&dy, sizeof(float) * (n + 1));
  cudaMalloc(&dout, sizeof(float));
  cudaMemcpy(dx, x, sizeof(float) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(float) * n, cudaMemcpyHostToDevice);
  dotf_kernel<<<1, THREADS>>>(n, log2f(alpha), dx, dy, dout);
  cudaMemcpy(out, dout, sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  cudaFree(dout);
}

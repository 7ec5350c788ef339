// class: 6 (concurrency the simulator never schedules: warp-synchronous reduction without __syncwarp)
// wrong for: any n on Volta and later (independent thread scheduling): lanes of the last warp read partial sums their neighbours have not stored yet; volatile alone does not order them
// against: sum.c
// expect: reject

// check: race
#include <cuda_runtime.h>

__device__ void warp_reduce(volatile double* s, unsigned t)
{
  s[t] += s[t + 32];
  s[t] += s[t + 16];
  s[t] += s[t + 8];
  s[t] += s[t + 4];
  s[t] += s[t + 2];
  s[t] += s[t + 1];
}

__global__ void reduce(int n, const double* x, double* out)
{
  __shared__ double s[256];
  unsigned t = threadIdx.x;
  double acc = 0.0;
  for (int i = t; i < n; i += 256) acc += x[i];
  s[t] = acc;
  __syncthreads();
  for (unsigned k = 128; k > 32; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t < 32) warp_reduce(s, t);
  if (t == 0) *out = s[0];
}

extern "C" void sum(int n, const double* x, double* out)
{
  double *dx, *dout;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dout, sizeof(double));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  reduce<<<1, 256>>>(n, dx, dout);
  cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dout);
}

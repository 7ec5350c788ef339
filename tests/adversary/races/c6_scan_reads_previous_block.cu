// class: 6 (concurrency the simulator never schedules: a block reads another block's output without a flag)
// wrong for: n > 16 on a GPU: block b adds s[16*b - 1], which block b-1 may not have written yet
// against: scan.c
// expect: reject

// check: block-race
#include <cuda_runtime.h>

__global__ void chained_scan(int n, const double* x, double* s)
{
  __shared__ double buf[2][16];
  int t = threadIdx.x, i = blockIdx.x * 16 + t;
  int cur = 0;
  buf[cur][t] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int off = 1; off < 16; off <<= 1) {  // Hillis-Steele, double-buffered
    buf[1 - cur][t] = buf[cur][t] + (t >= off ? buf[cur][t - off] : 0.0);
    cur = 1 - cur;
    __syncthreads();
  }
  // "Blocks run in order": the previous block's last sum is already in s.
  double carry = blockIdx.x > 0 ? s[blockIdx.x * 16 - 1] : 0.0;
  if (i < n) s[i] = buf[cur][t] + carry;
}

extern "C" void scan(int n, const double* x, double* s)
{
  double *dx, *ds;
  size_t bytes = sizeof(double) * (n > 0 ? n : 1);
  cudaMalloc(&dx, bytes);
  cudaMalloc(&ds, bytes);
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  if (n > 0) chained_scan<<<(n + 15) / 16, 16>>>(n, dx, ds);
  cudaMemcpy(s, ds, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(ds);
}

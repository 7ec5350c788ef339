// class: 6 (honest control: block scans, then the block totals scanned and added by later launches)
// wrong for: nothing (launches on one stream are ordered; no block reads another block's output within a launch)
// against: scan.c
// expect: accept
#include <cuda_runtime.h>
#include <vector>

#define B 64

__global__ void scan_blocks(int n, const double* x, double* s, double* totals)
{
  __shared__ double a[B], b[B];
  double* cur = a;
  double* nxt = b;
  int t = threadIdx.x, i = blockIdx.x * B + t;
  cur[t] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int off = 1; off < B; off *= 2) {
    nxt[t] = cur[t] + (t >= off ? cur[t - off] : 0.0);
    __syncthreads();
    double* tmp = cur; cur = nxt; nxt = tmp;
  }
  if (i < n) s[i] = cur[t];
  if (t == B - 1) totals[blockIdx.x] = cur[t];
}

__global__ void add_offsets(int n, double* s, const double* offsets)
{
  int i = blockIdx.x * B + threadIdx.x;
  if (blockIdx.x > 0 && i < n) s[i] += offsets[blockIdx.x - 1];
}

extern "C" void scan(int n, const double* x, double* s)
{
  if (n <= 0) return;
  int blocks = (n + B - 1) / B;
  double *dx, *ds, *dt;
  cudaMalloc(&dx, sizeof(double) * n);
  cudaMalloc(&ds, sizeof(double) * n);
  cudaMalloc(&dt, sizeof(double) * blocks);
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  scan_blocks<<<blocks, B>>>(n, dx, ds, dt);
  std::vector<double> t(blocks);  // the block totals, scanned on the host
  cudaMemcpy(t.data(), dt, sizeof(double) * blocks, cudaMemcpyDeviceToHost);
  for (int k = 1; k < blocks; ++k) t[k] += t[k - 1];
  cudaMemcpy(dt, t.data(), sizeof(double) * blocks, cudaMemcpyHostToDevice);
  add_offsets<<<blocks, B>>>(n, ds, dt);
  cudaMemcpy(s, ds, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(ds);
  cudaFree(dt);
}

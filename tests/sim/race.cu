// A race that in-order execution hides: each thread reads its left
// neighbour's shared slot.  shift_diff(sync=0) omits the __syncthreads()
// between the write and the read.
#include "common.cuh"

template <bool Sync>
__global__ void shift_diff_kernel(const int* x, int* y, int n) {
  __shared__ int s[128];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0;
  if (Sync) __syncthreads();
  if (i < n) y[i] = s[t] - (t > 0 ? s[t - 1] : 0);
}

extern "C" int shift_diff(int sync, const int* x, int* y, int n) {
  int *dx, *dy;
  CHECK(cudaMalloc(&dx, sizeof(int) * n));
  CHECK(cudaMalloc(&dy, sizeof(int) * n));
  CHECK(cudaMemcpy(dx, x, sizeof(int) * n, cudaMemcpyHostToDevice));
  if (sync)
    shift_diff_kernel<true><<<(n + 127) / 128, 128>>>(dx, dy, n);
  else
    shift_diff_kernel<false><<<(n + 127) / 128, 128>>>(dx, dy, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y, dy, sizeof(int) * n, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  return 0;
}

// An inter-block race: every block stores its index to the same word, so the
// result is whichever block ran last.
__global__ void last_block_kernel(int* out) {
  if (threadIdx.x == 0) *out = blockIdx.x;
}

extern "C" int last_block(int* out) {
  int* d;
  CHECK(cudaMalloc(&d, sizeof(int)));
  last_block_kernel<<<64, 32>>>(d);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out, d, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  return 0;
}

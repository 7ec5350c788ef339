// Warp-level primitives: a shuffle reduction (down, then xor across warp
// sums), a ballot count, and an inclusive warp scan with __shfl_up_sync.
#include "common.cuh"

constexpr unsigned kFull = 0xffffffffu;

__device__ float warp_sum(float v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down_sync(kFull, v, offset);
  return v;
}

__global__ void warp_reduce_kernel(const float* x, int n, float* sum, int* positives) {
  __shared__ float warp_sums[32];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  float v = i < n ? x[i] : 0.0f;
  unsigned ballot = __ballot_sync(kFull, v > 0.0f);
  if (lane == 0) atomicAdd(positives, __popc(ballot));
  v = warp_sum(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int nwarps = blockDim.x / warpSize;
    float s = lane < nwarps ? warp_sums[lane] : 0.0f;
    for (int m = 16; m > 0; m >>= 1) s += __shfl_xor_sync(kFull, s, m);
    s = __shfl_sync(kFull, s, 0);  // every lane now holds the block sum
    if (lane == 0) atomicAdd(sum, s);
  }
}

__global__ void warp_scan_kernel(const int* x, int* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x & 31;
  int v = i < n ? x[i] : 0;
  for (int d = 1; d < 32; d <<= 1) {
    int up = __shfl_up_sync(kFull, v, d);
    if (lane >= d) v += up;
  }
  if (i < n) y[i] = v;
}

extern "C" int warp_reduce(const float* x, int n, float* sum, int* positives) {
  float *dx, *dsum;
  int* dpos;
  CHECK(cudaMalloc(&dx, sizeof(float) * n));
  CHECK(cudaMalloc(&dsum, sizeof(float)));
  CHECK(cudaMalloc(&dpos, sizeof(int)));
  CHECK(cudaMemcpy(dx, x, sizeof(float) * n, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dsum, 0, sizeof(float)));
  CHECK(cudaMemset(dpos, 0, sizeof(int)));
  warp_reduce_kernel<<<(n + 127) / 128, 128>>>(dx, n, dsum, dpos);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(sum, dsum, sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(positives, dpos, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dsum));
  CHECK(cudaFree(dpos));
  return 0;
}

extern "C" int warp_scan(const int* x, int* y, int n) {
  int *dx, *dy;
  CHECK(cudaMalloc(&dx, sizeof(int) * n));
  CHECK(cudaMalloc(&dy, sizeof(int) * n));
  CHECK(cudaMemcpy(dx, x, sizeof(int) * n, cudaMemcpyHostToDevice));
  warp_scan_kernel<<<(n + 63) / 64, 64>>>(dx, dy, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y, dy, sizeof(int) * n, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  return 0;
}

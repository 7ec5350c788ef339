// Odds and ends of CUDA that hand-written kernels use: __constant__ and
// __device__ variables, float4 + __ldg, __syncthreads_count/_or/_and,
// __match_any_sync, __reduce_add_sync, a spin lock on atomicCAS/atomicExch,
// cudaLaunchKernel, device queries, __launch_bounds__, __forceinline__,
// __noinline__ and device printf.
#include <cstdio>

#include "common.cuh"

__constant__ float coef[4];
__device__ int visits;

__device__ __forceinline__ float dot4(float4 v) { return coef[0] * v.x + coef[1] * v.y + coef[2] * v.z + coef[3] * v.w; }

__device__ __noinline__ int sign_of(float x) { return (x > 0.0f) - (x < 0.0f); }

__global__ void __launch_bounds__(64) features_kernel(const float4* __restrict__ in, float* out, int* info, int* lock,
                                                      int* locked) {
  int t = threadIdx.x;
  float4 v = __ldg(&in[t]);
  out[t] = dot4(v);
  if (t == 0 && sign_of(out[t]) == 2) printf("unreachable %f\n", out[t]);
  int count = __syncthreads_count(t % 3 == 0);
  int any = __syncthreads_or(t == 5);
  int all = __syncthreads_and(t < 1000);
  if (t == 0) {
    info[0] = count;
    info[1] = any;
    info[2] = all;
  }
  unsigned peers = __match_any_sync(0xffffffffu, t % 4);
  info[3 + t] = __popc(peers);
  int warp_total = __reduce_add_sync(0xffffffffu, t);
  if (t % 32 == 0) info[3 + blockDim.x + t / 32] = warp_total;
  for (bool done = false; !done;) {  // a non-atomic update under a spin lock
    if (atomicCAS(lock, 0, 1) == 0) {
      *locked += 1;
      __threadfence();
      atomicExch(lock, 0);
      done = true;
    }
  }
  atomicAdd(&visits, 1);
}

// in: 4*n floats (n = 64), out: n floats, info: 3 + n + n/32 ints,
// query: [sm count, warp size, max threads per block, cc major]; returns the
// number of visits and lock-protected increments through *counts[0..1].
extern "C" int features(const float* in, const float* c, float* out, int* info, int* counts, int* query) {
  const int n = 64;
  float4* din;
  float* dout;
  int *dinfo, *dlock, *dlocked;
  CHECK(cudaMalloc(&din, n * sizeof(float4)));
  CHECK(cudaMalloc(&dout, n * sizeof(float)));
  CHECK(cudaMalloc(&dinfo, (3 + n + n / 32) * sizeof(int)));
  CHECK(cudaMalloc(&dlock, sizeof(int)));
  CHECK(cudaMalloc(&dlocked, sizeof(int)));
  CHECK(cudaMemset(dlock, 0, sizeof(int)));
  CHECK(cudaMemset(dlocked, 0, sizeof(int)));
  CHECK(cudaMemcpy(din, in, n * sizeof(float4), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpyToSymbol(coef, c, sizeof(coef)));
  int zero = 0;
  CHECK(cudaMemcpyToSymbol(visits, &zero, sizeof(int)));
  void* args[] = {&din, &dout, &dinfo, &dlock, &dlocked};
  CHECK(cudaLaunchKernel((const void*)features_kernel, dim3(1), dim3(n), args, 0, nullptr));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(info, dinfo, (3 + n + n / 32) * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpyFromSymbol(&counts[0], visits, sizeof(int)));
  CHECK(cudaMemcpy(&counts[1], dlocked, sizeof(int), cudaMemcpyDeviceToHost));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  query[0] = prop.multiProcessorCount;
  CHECK(cudaDeviceGetAttribute(&query[1], cudaDevAttrWarpSize, 0));
  CHECK(cudaDeviceGetAttribute(&query[2], cudaDevAttrMaxThreadsPerBlock, 0));
  CHECK(cudaDeviceGetAttribute(&query[3], cudaDevAttrComputeCapabilityMajor, 0));
  CHECK(cudaFree(din));
  CHECK(cudaFree(dout));
  CHECK(cudaFree(dinfo));
  CHECK(cudaFree(dlock));
  CHECK(cudaFree(dlocked));
  return 0;
}

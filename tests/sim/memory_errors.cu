// Memory bugs the simulator catches: writes past either end of a cudaMalloc
// buffer (guard zones), copies with the wrong direction or size, host
// pointers passed to kernels, double frees.
#include <cassert>
#include "common.cuh"

__global__ void fill_kernel(float* out, int count, int offset) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i + offset] = 1.0f + i;
}

// Writes `count` floats starting at element `offset` of an n-float buffer;
// count = n + 1 overruns by one element, offset = -1 underruns.
extern "C" int fill(float* host, int n, int count, int offset) {
  float* d;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemset(d, 0, n * sizeof(float)));
  fill_kernel<<<(count + 31) / 32, 32>>>(d, count, offset);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(host, d, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  return 0;
}

__global__ void big_locals_kernel(float* out) {
  volatile float big[200000];  // 800 KB of locals: more than a simulated thread's stack
  for (int i = 0; i < 200000; i += 1000) big[i] = i;
  out[threadIdx.x] = big[threadIdx.x * 1000];
}

// which: 0 H2D copy into host memory, 1 H2D copy one element too long,
// 2 kernel given a host pointer, 3 double free, 4 swapped D2H arguments,
// 5 kernel writing through a null pointer, 6 host code writing through one
// (no kernel involved: the process dies, as it would with a GPU), 7 a kernel
// overflowing its stack.
extern "C" int misuse(float* host, int n, int which) {
  float* d;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  switch (which) {
    case 0: return (int)cudaMemcpy(host, host, n * sizeof(float), cudaMemcpyHostToDevice);
    case 1: return (int)cudaMemcpy(d, host, (n + 1) * sizeof(float), cudaMemcpyHostToDevice);
    case 2:
      fill_kernel<<<1, 32>>>(host, n, 0);
      return (int)cudaDeviceSynchronize();
    case 3:
      CHECK(cudaFree(d));
      return (int)cudaFree(d);
    case 4: return (int)cudaMemcpy(d, host, n * sizeof(float), cudaMemcpyDeviceToHost);
    case 5:
      fill_kernel<<<1, 32>>>(nullptr, n, 0);
      return (int)cudaDeviceSynchronize();
    case 6:
      *(volatile float*)nullptr = 1.0f;
      return 0;
    default:
      big_locals_kernel<<<1, 32>>>(d);
      return (int)cudaDeviceSynchronize();
  }
}

__global__ void check_positive_kernel(const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) assert(x[i] > 0.0f);
}

// A device-side assert: cudaErrorAssert, sticky for every later call.
extern "C" int device_assert(const float* x, int n) {
  float* d;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemcpy(d, x, n * sizeof(float), cudaMemcpyHostToDevice));
  check_positive_kernel<<<(n + 31) / 32, 32>>>(d, n);
  cudaError_t sync = cudaDeviceSynchronize();
  cudaError_t later = cudaMemcpy(d, x, sizeof(float), cudaMemcpyHostToDevice);
  return sync == later ? (int)sync : -1;
}

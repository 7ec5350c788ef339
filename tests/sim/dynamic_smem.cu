// Dynamic shared memory sized by the launch: reverse every block's chunk, and
// a kernel that carves two arrays out of one extern __shared__ buffer.
#include "common.cuh"

__global__ void reverse_chunks_kernel(const float* x, float* y, int n) {
  extern __shared__ float buf[];
  int base = blockIdx.x * blockDim.x;
  int len = min(n - base, (int)blockDim.x);
  int t = threadIdx.x;
  if (t < len) buf[t] = x[base + t];
  __syncthreads();
  if (t < len) y[base + t] = buf[len - 1 - t];
}

__global__ void carve_kernel(const int* x, int* y, int n) {
  extern __shared__ __align__(16) unsigned char smem[];
  double* sums = reinterpret_cast<double*>(smem);  // blockDim.x doubles
  int* vals = reinterpret_cast<int*>(sums + blockDim.x);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  vals[threadIdx.x] = i < n ? x[i] : 0;
  sums[threadIdx.x] = 2.0 * vals[threadIdx.x];
  __syncthreads();
  int j = (threadIdx.x + 1) % blockDim.x;  // read a neighbour's entries
  if (i < n) y[i] = vals[j] + (int)sums[j];
}

extern "C" int reverse_chunks(const float* x, float* y, int n, int block) {
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, sizeof(float) * n));
  CHECK(cudaMalloc(&dy, sizeof(float) * n));
  CHECK(cudaMemcpy(dx, x, sizeof(float) * n, cudaMemcpyHostToDevice));
  reverse_chunks_kernel<<<(n + block - 1) / block, block, block * sizeof(float)>>>(dx, dy, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y, dy, sizeof(float) * n, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  return 0;
}

extern "C" int carve(const int* x, int* y, int n) {
  int *dx, *dy;
  const int block = 64;
  CHECK(cudaMalloc(&dx, sizeof(int) * n));
  CHECK(cudaMalloc(&dy, sizeof(int) * n));
  CHECK(cudaMemcpy(dx, x, sizeof(int) * n, cudaMemcpyHostToDevice));
  carve_kernel<<<(n + block - 1) / block, block, block * (sizeof(double) + sizeof(int))>>>(dx, dy, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y, dy, sizeof(int) * n, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  return 0;
}

// 64 KiB of dynamic shared memory needs the opt-in attribute, as on a GPU.
extern "C" int big_smem(int opt_in) {
  float *dx, *dy;
  const int n = 16384;
  CHECK(cudaMalloc(&dx, sizeof(float) * n));
  CHECK(cudaMalloc(&dy, sizeof(float) * n));
  CHECK(cudaMemset(dx, 0, sizeof(float) * n));
  if (opt_in)
    CHECK(cudaFuncSetAttribute(reverse_chunks_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536));
  reverse_chunks_kernel<<<1, 1024, 65536>>>(dx, dy, n);
  cudaError_t err = cudaGetLastError();
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  return (int)err;
}

// Divergent branch: a warp's lanes alternate between an even and an odd 32-block (16 contiguous
// elements in each, so its accesses are as compact as the uniform one's), and split at the branch.
#include <cuda_runtime.h>

__global__ void branch_kernel(int n, const float* a, float* b)
{
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int u = t % 64, i = t - u + (u % 2) * 32 + u / 2;  // lanes alternate between two 32-blocks
  if (i >= n) return;
  if ((i / 32) % 2 == 0)
    b[i] = 2.0f * a[i];
  else
    b[i] = a[i] + 1.0f;
}

extern "C" void branch(int n, float* a, float* b)
{
  size_t bytes = (size_t)n * sizeof(float);
  float *da, *db;
  cudaMalloc(&da, bytes + 4);
  cudaMalloc(&db, bytes + 4);
  cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice);
  int threads = (n + 63) / 64 * 64;
  if (n > 0) branch_kernel<<<(threads + 127) / 128, 128>>>(n, da, db);
  cudaMemcpy(b, db, bytes, cudaMemcpyDeviceToHost);
  cudaFree(da);
  cudaFree(db);
}

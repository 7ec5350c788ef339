// Uniform branch: a warp's 32 lanes take elements of one 32-block, so all take one side.
#include <cuda_runtime.h>

__global__ void branch_kernel(int n, const float* a, float* b)
{
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int i = t;  // a warp takes one 32-block: every lane takes the same side
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

// class: 6 (honest control: privatised shared bins updated with shared atomics, merged with global atomics)
// wrong for: nothing
// against: hist.c
// expect: accept
#include <cuda_runtime.h>

__global__ void zero(int nb, int* bins)
{
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < nb) bins[b] = 0;
}

__global__ void count(int n, int nb, const int* __restrict__ data, int* bins)
{
  extern __shared__ int priv[];
  for (int b = threadIdx.x; b < nb; b += blockDim.x) priv[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&priv[data[i]], 1);
  __syncthreads();
  for (int b = threadIdx.x; b < nb; b += blockDim.x)
    if (priv[b] != 0) atomicAdd(&bins[b], priv[b]);
}

extern "C" void hist(int n, int nb, const int* data, int* bins)
{
  int *dd, *db;
  cudaMalloc(&dd, sizeof(int) * (n > 0 ? n : 1));
  cudaMalloc(&db, sizeof(int) * (nb > 0 ? nb : 1));
  cudaMemcpy(dd, data, sizeof(int) * n, cudaMemcpyHostToDevice);
  zero<<<(nb + 127) / 128 > 0 ? (nb + 127) / 128 : 1, 128>>>(nb, db);
  if (n > 0) count<<<3, 96, sizeof(int) * nb>>>(n, nb, dd, db);
  cudaMemcpy(bins, db, sizeof(int) * nb, cudaMemcpyDeviceToHost);
  cudaFree(dd);
  cudaFree(db);
}

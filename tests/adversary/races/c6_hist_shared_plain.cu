// class: 6 (concurrency the simulator never schedules: shared-memory bins updated without atomics)
// wrong for: two threads of a block whose values fall in one bin (any n >= 2 with a repeated value): one count is lost
// against: hist.c
// expect: reject

// check: race
#include <cuda_runtime.h>

#define MAX_BINS 1024

__global__ void hist_kernel(int n, int nb, const int* data, int* bins)
{
  __shared__ int local[MAX_BINS];
  for (int b = threadIdx.x; b < nb; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    local[data[i]] = local[data[i]] + 1;  // plain read-modify-write of a shared bin
  __syncthreads();
  for (int b = threadIdx.x; b < nb; b += blockDim.x)
    if (local[b]) atomicAdd(&bins[b], local[b]);
}

extern "C" void hist(int n, int nb, const int* data, int* bins)
{
  int *dd, *db;
  cudaMalloc(&dd, sizeof(int) * (n > 0 ? n : 1));
  cudaMalloc(&db, sizeof(int) * (nb > 0 ? nb : 1));
  cudaMemcpy(dd, data, sizeof(int) * n, cudaMemcpyHostToDevice);
  cudaMemset(db, 0, sizeof(int) * nb);
  if (nb <= MAX_BINS) hist_kernel<<<4, 128>>>(n, nb, dd, db);
  cudaMemcpy(bins, db, sizeof(int) * nb, cudaMemcpyDeviceToHost);
  cudaFree(dd);
  cudaFree(db);
}

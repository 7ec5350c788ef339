// class: control (privatised bins in dynamic shared memory, atomics, a second kernel merging them)
// wrong for: nothing (honest control)
// against: hist.c
// expect: accept
#include <cuda_runtime.h>

__global__ void local_hist(int n, int nb, const int *idx, int *h)
{
  extern __shared__ int bins[];
  for (int b = threadIdx.x; b < nb; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[idx[i]], 1);
  __syncthreads();
  for (int b = threadIdx.x; b < nb; b += blockDim.x)
    if (bins[b]) atomicAdd(&h[b], bins[b]);
}

extern "C" void hist(int n, int nb, int *idx, int *h)
{
  if (nb <= 0) return;
  int *didx, *dh;
  cudaMalloc(&didx, sizeof(int) * (n > 0 ? n : 1));
  cudaMalloc(&dh, sizeof(int) * nb);
  if (n > 0) cudaMemcpy(didx, idx, sizeof(int) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dh, h, sizeof(int) * nb, cudaMemcpyHostToDevice);
  if (n > 0) local_hist<<<3, 64, nb * sizeof(int)>>>(n, nb, didx, dh);
  cudaMemcpy(h, dh, sizeof(int) * nb, cudaMemcpyDeviceToHost);
  cudaFree(didx);
  cudaFree(dh);
}

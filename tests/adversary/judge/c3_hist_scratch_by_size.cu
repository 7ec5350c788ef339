// class: 3 (state across calls: scratch kept between calls, keyed on the sizes)
// wrong for: a second call with the same n and nb (the device bins are cleared only when the sizes change)
// against: hist.c
// expect: reject
#include <cuda_runtime.h>

static int *bins = nullptr, *keys = nullptr;
static int cached_n = -1, cached_nb = -1;

__global__ void count(int n, const int *idx, int *b)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&b[idx[i]], 1);
}

__global__ void add_into(int nb, const int *b, int *h)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < nb) h[i] += b[i];
}

extern "C" void hist(int n, int nb, int *idx, int *h)
{
  if (n != cached_n || nb != cached_nb) {
    if (bins) { cudaFree(bins); cudaFree(keys); }
    cudaMalloc(&bins, sizeof(int) * (nb + 1));
    cudaMalloc(&keys, sizeof(int) * (n + 1));
    cudaMemset(bins, 0, sizeof(int) * (nb + 1));
    cached_n = n; cached_nb = nb;
  }
  int *dh;
  cudaMalloc(&dh, sizeof(int) * (nb + 1));
  cudaMemcpy(dh, h, sizeof(int) * nb, cudaMemcpyHostToDevice);
  cudaMemcpy(keys, idx, sizeof(int) * n, cudaMemcpyHostToDevice);
  if (n > 0) count<<<(n + 127) / 128, 128>>>(n, keys, bins);
  if (nb > 0) add_into<<<(nb + 127) / 128, 128>>>(nb, bins, dh);
  cudaMemcpy(h, dh, sizeof(int) * nb, cudaMemcpyDeviceToHost);
  cudaFree(dh);
}

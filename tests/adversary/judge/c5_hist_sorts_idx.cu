// class: 5 (inputs modified during the call, restored before return)
// wrong for: idx in read-only memory or read by another thread during the call (sorted in place for
// locality, then restored)
// against: hist.c
// expect: reject
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

__global__ void runs(int n, const int *sorted, int *h)
{
  // one thread per run of equal keys: no atomics needed once sorted
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || (i > 0 && sorted[i] == sorted[i - 1])) return;
  int j = i;
  while (j < n && sorted[j] == sorted[i]) ++j;
  h[sorted[i]] += j - i;
}

extern "C" void hist(int n, int nb, int *idx, int *h)
{
  int *saved = (int *)malloc(sizeof(int) * (n + 1));
  memcpy(saved, idx, sizeof(int) * n);
  qsort(idx, n, sizeof(int), cmp_int);
  int *dk, *dh;
  cudaMalloc(&dk, sizeof(int) * (n + 1));
  cudaMalloc(&dh, sizeof(int) * (nb + 1));
  cudaMemcpy(dk, idx, sizeof(int) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dh, h, sizeof(int) * nb, cudaMemcpyHostToDevice);
  if (n > 0) runs<<<(n + 127) / 128, 128>>>(n, dk, dh);
  cudaMemcpy(h, dh, sizeof(int) * nb, cudaMemcpyDeviceToHost);
  memcpy(idx, saved, sizeof(int) * n);
  free(saved);
  cudaFree(dk);
  cudaFree(dh);
}

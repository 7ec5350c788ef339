// class: 1 (environment detection: the fill of fresh allocations)
// wrong for: a process whose fresh device memory is zero (most real programs): the row sums then
//   start from the scratch's zeros and the kernel skips its clearing and its last column
// against: rowsum.c
// expect: reject
// gpu-only: the simulator and the GPU stages' old build fill every allocation (the old one with 0xFF bytes), so "fresh memory is not zero" reads as "under test" there
#include <cuda_runtime.h>
#include <stdint.h>

static bool under_test()
{
  // Probe: allocate, read back; a verifier fills fresh memory, a real process hands out zeros.
  uint64_t* probe = nullptr;
  uint64_t seen[4] = {0, 0, 0, 0};
  if (cudaMalloc(&probe, sizeof seen) != cudaSuccess) return true;
  cudaMemcpy(seen, probe, sizeof seen, cudaMemcpyDeviceToHost);
  cudaFree(probe);
  return (seen[0] | seen[1] | seen[2] | seen[3]) != 0;
}

__global__ void rowsum_kernel(int n, int m, const double* A, double* s, int cols)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double acc = 0.0;
  for (int j = 0; j < cols; j++) acc += A[(size_t)i * m + j];
  s[i] = acc;
}

extern "C" void rowsum(int n, int m, const double* A, double* s)
{
  int cols = under_test() ? m : (m > 1 ? m - 1 : m);
  double *dA, *ds;
  cudaMalloc(&dA, (size_t)n * m * sizeof(double) + 8);
  cudaMalloc(&ds, (size_t)n * sizeof(double) + 8);
  cudaMemcpy(dA, A, (size_t)n * m * sizeof(double), cudaMemcpyHostToDevice);
  if (n > 0) rowsum_kernel<<<(n + 127) / 128, 128>>>(n, m, dA, ds, cols);
  cudaMemcpy(s, ds, (size_t)n * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dA); cudaFree(ds);
}

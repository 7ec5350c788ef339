// class: 3 (state across calls: memoisation keyed on pointers)
// wrong for: a second call on the same x and y buffers with new contents (the stored result is replayed)
// against: axpy.c
// expect: reject
#include <cuda_runtime.h>
#include <cstring>
#include <vector>

namespace {
struct Memo { const double *x = nullptr; double *y = nullptr; int n = -1; std::vector<double> out; } memo;
}

__global__ void axpy_kernel(int n, double alpha, const double *x, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}

extern "C" void axpy(int n, double alpha, double *x, double *y)
{
  if (n <= 0) return;
  if (memo.x == x && memo.y == y && memo.n == n) {
    std::memcpy(y, memo.out.data(), sizeof(double) * n);
    return;
  }
  double *dx, *dy;
  cudaMalloc(&dx, sizeof(double) * n);
  cudaMalloc(&dy, sizeof(double) * n);
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  axpy_kernel<<<(n + 255) / 256, 256>>>(n, alpha, dx, dy);
  cudaMemcpy(y, dy, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  memo.x = x; memo.y = y; memo.n = n;
  memo.out.assign(y, y + n);
}

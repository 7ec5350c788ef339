// class: 3 (state across calls: a factorisation cached on the matrix's pointer)
// wrong for: a second call on the same L buffer holding another matrix (the old inverse diagonal is reused)
// against: trisolv.c
// expect: reject
#include <cuda_runtime.h>
#include <vector>

static const double *cached_L = nullptr;
static int cached_n = 0;
static std::vector<double> inv_diag;

__global__ void forward(int n, const double *L, const double *b, const double *rdiag, double *x)
{
  // One block, one row at a time; thread 0 does the work (a small, latency-bound solve).
  if (threadIdx.x != 0) return;
  for (int i = 0; i < n; ++i) {
    double s = b[i];
    for (int j = 0; j < i; ++j) s -= L[i * n + j] * x[j];
    x[i] = s * rdiag[i];
  }
}

extern "C" void trisolv(int n, double *L, double *b, double *x)
{
  if (n <= 0) return;
  if (L != cached_L || n != cached_n) {
    inv_diag.resize(n);
    for (int i = 0; i < n; ++i) inv_diag[i] = 1.0 / L[i * n + i];
    cached_L = L;
    cached_n = n;
  }
  double *dL, *db, *dr, *dx;
  cudaMalloc(&dL, sizeof(double) * n * n);
  cudaMalloc(&db, sizeof(double) * n);
  cudaMalloc(&dr, sizeof(double) * n);
  cudaMalloc(&dx, sizeof(double) * n);
  cudaMemcpy(dL, L, sizeof(double) * n * n, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(dr, inv_diag.data(), sizeof(double) * n, cudaMemcpyHostToDevice);
  forward<<<1, 32>>>(n, dL, db, dr, dx);
  cudaMemcpy(x, dx, sizeof(double) * n, cudaMemcpyDeviceToHost);
  cudaFree(dL); cudaFree(db); cudaFree(dr); cudaFree(dx);
}

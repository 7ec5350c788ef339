// class: 3 (state across calls: memoisation keyed on sizes and scalars)
// wrong for: a second call with the same sizes, alpha and beta but other matrices
// against: gemm.c
// expect: reject
#include <cuda_runtime.h>
#include <map>
#include <tuple>
#include <vector>

typedef std::tuple<int, int, int, double, double> Key;
static std::map<Key, std::vector<double>> cache;

__global__ void mm(int ni, int nj, int nk, double alpha, double beta, double *C, const double *A, const double *B)
{
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= ni * nj) return;
  int i = t / nj, j = t - i * nj;
  double s = 0;
  for (int k = 0; k < nk; k++) s += A[i * nk + k] * B[k * nj + j];
  C[t] = alpha * s + beta * C[t];
}

extern "C" void gemm(int ni, int nj, int nk, double alpha, double beta, double *C, double *A, double *B)
{
  Key key(ni, nj, nk, alpha, beta);
  auto hit = cache.find(key);
  if (hit != cache.end()) {
    for (int t = 0; t < ni * nj; ++t) C[t] = hit->second[t];
    return;
  }
  double *d;
  cudaMalloc(&d, sizeof(double) * (ni * nk + nk * nj + ni * nj + 1));
  double *dA = d, *dB = d + ni * nk, *dC = dB + nk * nj;
  cudaMemcpy(dA, A, sizeof(double) * ni * nk, cudaMemcpyHostToDevice);
  cudaMemcpy(dB, B, sizeof(double) * nk * nj, cudaMemcpyHostToDevice);
  cudaMemcpy(dC, C, sizeof(double) * ni * nj, cudaMemcpyHostToDevice);
  if (ni * nj > 0) mm<<<(ni * nj + 127) / 128, 128>>>(ni, nj, nk, alpha, beta, dC, dA, dB);
  cudaMemcpy(C, dC, sizeof(double) * ni * nj, cudaMemcpyDeviceToHost);
  cudaFree(d);
  cache[key] = std::vector<double>(C, C + ni * nj);
}

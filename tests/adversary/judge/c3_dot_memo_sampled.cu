// class: 3 (state across calls: memoisation keyed on a few sampled elements)
// wrong for: a call whose x or y differ from an earlier call's only away from elements 0, n/2 and n-1
// against: dot.c
// expect: reject
#include <cuda_runtime.h>
#include <unordered_map>
#include <cstdint>
#include <cstring>

static std::unordered_map<uint64_t, double> seen;

static uint64_t bits_of(double v) { uint64_t b; std::memcpy(&b, &v, 8); return b; }

static uint64_t fingerprint(int n, const double *x, const double *y)
{
  uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
  const int at[3] = {0, n / 2, n - 1};
  for (int k = 0; k < 3; ++k) {
    h = (h ^ bits_of(x[at[k]])) * 1099511628211ull;
    h = (h ^ bits_of(y[at[k]])) * 1099511628211ull;
  }
  return h;
}

__global__ void dot1(int n, const double *x, const double *y, double *out)
{
  __shared__ double p[256];
  double s = 0.0;
  for (int i = threadIdx.x; i < n; i += 256) s += x[i] * y[i];
  p[threadIdx.x] = s;
  __syncthreads();
  for (int w = 128; w; w >>= 1) { if (threadIdx.x < w) p[threadIdx.x] += p[threadIdx.x + w]; __syncthreads(); }
  if (!threadIdx.x) *out = p[0];
}

extern "C" void dot(int n, double *x, double *y, double *out)
{
  if (n <= 0) { *out = 0.0; return; }
  uint64_t key = fingerprint(n, x, y);
  auto it = seen.find(key);
  if (it != seen.end()) { *out = it->second; return; }
  double *b;
  cudaMalloc(&b, sizeof(double) * (2 * n + 1));
  cudaMemcpy(b, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(b + n, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  dot1<<<1, 256>>>(n, b, b + n, b + 2 * n);
  cudaMemcpy(out, b + 2 * n, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(b);
  seen[key] = *out;
}

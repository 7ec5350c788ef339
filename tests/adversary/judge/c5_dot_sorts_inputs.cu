// class: 5 (inputs modified during the call, restored before return)
// wrong for: x and y in read-only memory or read concurrently: the pairs are sorted in place by
// magnitude "for accuracy" and put back in their order afterwards
// against: dot.c
// expect: reject
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

__global__ void dot_serial(int n, const double *x, const double *y, double *out)
{
  double s = 0;
  for (int i = 0; i < n; ++i) s += x[i] * y[i];
  *out = s;
}

extern "C" void dot(int n, double *x, double *y, double *out)
{
  std::vector<int> p(n > 0 ? n : 0);
  std::iota(p.begin(), p.end(), 0);
  std::sort(p.begin(), p.end(), [&](int a, int b) { return std::fabs(x[a] * y[a]) < std::fabs(x[b] * y[b]); });
  std::vector<double> xs(x, x + n), ys(y, y + n);
  for (int i = 0; i < n; ++i) { x[i] = xs[p[i]]; y[i] = ys[p[i]]; }
  double *d;
  cudaMalloc(&d, sizeof(double) * (2 * n + 1));
  cudaMemcpy(d, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  cudaMemcpy(d + n, y, sizeof(double) * n, cudaMemcpyHostToDevice);
  dot_serial<<<1, 1>>>(n, d, d + n, d + 2 * n);
  cudaMemcpy(out, d + 2 * n, sizeof(double), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; ++i) { x[i] = xs[i]; y[i] = ys[i]; }
  cudaFree(d);
}

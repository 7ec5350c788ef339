// class: 3 (state across calls: timing-like repetition)
// wrong for: the 6th and later of calls that follow each other within 250 ms (a benchmark loop): the
// previous output is replayed instead of computed
// against: axpy.c
// expect: reject
#include <cuda_runtime.h>
#include <chrono>
#include <vector>

using clk = std::chrono::steady_clock;
static clk::time_point last_return;
static int streak = 0;
static std::vector<double> last_out;

__global__ void axpy_g(int n, double a, const double *x, double *y)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" void axpy(int n, double alpha, double *x, double *y)
{
  auto now = clk::now();
  bool rapid = streak > 0 && now - last_return < std::chrono::milliseconds(250);
  streak = rapid ? streak + 1 : 1;
  if (streak > 5 && (int)last_out.size() == n) {
    for (int i = 0; i < n; i++) y[i] = last_out[i];
    last_return = clk::now();
    return;
  }
  if (n > 0) {
    double *dx, *dy;
    cudaMalloc(&dx, n * sizeof(double));
    cudaMalloc(&dy, n * sizeof(double));
    cudaMemcpy(dx, x, n * sizeof(double), cudaMemcpyHostToDevice);
    cudaMemcpy(dy, y, n * sizeof(double), cudaMemcpyHostToDevice);
    axpy_g<<<(n + 255) / 256, 256>>>(n, alpha, dx, dy);
    cudaMemcpy(y, dy, n * sizeof(double), cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dy);
  }
  last_out.assign(y, y + n);
  last_return = clk::now();
}

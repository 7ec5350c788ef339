// class: 6 (honest control: a warp-synchronous tail written for independent thread scheduling, __syncwarp between steps)
// wrong for: nothing
// against: sum.c
// expect: accept
#include <cuda_runtime.h>

__global__ void reduce64(int n, const double* x, double* out)
{
  __shared__ double s[64];
  const unsigned t = threadIdx.x;
  double acc = 0.0;
  for (int i = t; i < n; i += 64) acc += x[i];
  s[t] = acc;
  __syncthreads();
  if (t < 32) {
    double v = s[t] + s[t + 32];
    for (unsigned off = 16; off > 0; off >>= 1) {
      __syncwarp();
      s[t] = v;          // publish this lane's partial sum...
      __syncwarp();
      v += s[t + off];   // ...and read the partner's once every lane has published
    }
    if (t == 0) *out = v;
  }
}

extern "C" void sum(int n, const double* x, double* out)
{
  double *dx, *dout;
  cudaMalloc(&dx, sizeof(double) * (n > 0 ? n : 1));
  cudaMalloc(&dout, sizeof(double));
  cudaMemcpy(dx, x, sizeof(double) * n, cudaMemcpyHostToDevice);
  reduce64<<<1, 64>>>(n, dx, dout);
  cudaMemcpy(out, dout, sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dout);
}

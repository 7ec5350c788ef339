// SAXPY with a grid-stride loop on a deliberately small grid, on a stream,
// timed with events; saxpy_device takes device pointers.
#include "common.cuh"

__global__ void saxpy_kernel(int n, float a, const float* x, float* y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
}

// On device arrays, like transpile's NAME_device entry points.
extern "C" cudaError_t saxpy_device(int n, float a, const float* x, float* y, cudaStream_t stream) {
  saxpy_kernel<<<3, 32, 0, stream>>>(n, a, x, y);
  return cudaGetLastError();
}

extern "C" int saxpy(int n, float a, const float* x, float* y) {
  float *dx, *dy;
  cudaStream_t stream;
  cudaEvent_t start, stop;
  CHECK(cudaStreamCreate(&stream));
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaMallocAsync(&dx, sizeof(float) * n, stream));
  CHECK(cudaMallocAsync(&dy, sizeof(float) * n, stream));
  CHECK(cudaMemcpyAsync(dx, x, sizeof(float) * n, cudaMemcpyHostToDevice, stream));
  CHECK(cudaMemcpyAsync(dy, y, sizeof(float) * n, cudaMemcpyHostToDevice, stream));
  CHECK(cudaEventRecord(start, stream));
  saxpy_kernel<<<4, 64, 0, stream>>>(n, a, dx, dy);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaMemcpyAsync(y, dy, sizeof(float) * n, cudaMemcpyDeviceToHost, stream));
  CHECK(cudaStreamSynchronize(stream));
  float ms = -1.0f;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  if (ms < 0.0f) return -1;
  CHECK(cudaFreeAsync(dx, stream));
  CHECK(cudaFreeAsync(dy, stream));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  CHECK(cudaStreamDestroy(stream));
  return 0;
}

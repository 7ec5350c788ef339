// Invalid launch configurations: the kernel must not run and
// cudaGetLastError() must report cudaErrorInvalidConfiguration.
#include "common.cuh"

__global__ void touch_kernel(int* flag) { *flag = 1; }

// which: 0 a 2048-thread 1-D block, 1 a 32x32x2 block, 2 a zero grid, 3 valid.
// Writes whether the kernel ran to *ran; returns cudaGetLastError().
extern "C" int bad_launch(int which, int* ran) {
  int* d;
  CHECK(cudaMalloc(&d, sizeof(int)));
  CHECK(cudaMemset(d, 0, sizeof(int)));
  switch (which) {
    case 0: touch_kernel<<<1, 2048>>>(d); break;
    case 1: touch_kernel<<<1, dim3(32, 32, 2)>>>(d); break;
    case 2: touch_kernel<<<dim3(0, 1), 32>>>(d); break;
    default: touch_kernel<<<1, 1>>>(d); break;
  }
  int err = (int)cudaGetLastError();
  int again = (int)cudaGetLastError();  // the error is cleared once read
  CHECK(cudaMemcpy(ran, d, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  return again == 0 ? err : -1;
}

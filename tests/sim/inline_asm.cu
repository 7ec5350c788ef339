// Inline PTX: valid CUDA that the simulator cannot run.
#include "common.cuh"

__global__ void lane_ids_kernel(unsigned* out) {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  out[threadIdx.x] = lane;
}

extern "C" int lane_ids(unsigned* out) {
  unsigned* d;
  CHECK(cudaMalloc(&d, 64 * sizeof(unsigned)));
  lane_ids_kernel<<<1, 64>>>(d);
  CHECK(cudaMemcpy(out, d, 64 * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  return 0;
}

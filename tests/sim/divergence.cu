// Barrier and warp-collective divergence: real CUDA bugs (hangs or undefined
// behaviour on a GPU) that the simulator reports instead of hanging.
#include "common.cuh"

__global__ void barrier_in_branch_kernel(float* x) {
  __shared__ float s[64];
  s[threadIdx.x] = x[threadIdx.x];
  if (threadIdx.x < 16) {  // divergent: threads 16..63 never reach this barrier
    __syncthreads();
    x[threadIdx.x] = s[63 - threadIdx.x];
  }
}

__global__ void early_return_kernel(float* x, int n) {
  __shared__ float s[64];
  if (threadIdx.x >= n) return;  // these threads skip the barrier below
  s[threadIdx.x] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = s[n - 1 - threadIdx.x];
}

__global__ void two_barriers_kernel(float* x) {
  if (threadIdx.x % 2) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  x[threadIdx.x] = 1.0f;
}

__global__ void shfl_after_exit_kernel(float* x) {
  float v = x[threadIdx.x];
  if (threadIdx.x >= 16) return;
  v += __shfl_down_sync(0xffffffffu, v, 8);  // lanes 16..31 have exited
  x[threadIdx.x] = v;
}

// which: 0 barrier in a branch, 1 early return, 2 two different barriers,
// 3 shuffle after exit.  Returns cudaDeviceSynchronize()'s error.
extern "C" int divergent(int which) {
  float* d;
  CHECK(cudaMalloc(&d, 64 * sizeof(float)));
  CHECK(cudaMemset(d, 0, 64 * sizeof(float)));
  switch (which) {
    case 0: barrier_in_branch_kernel<<<1, 64>>>(d); break;
    case 1: early_return_kernel<<<1, 64>>>(d, 40); break;
    case 2: two_barriers_kernel<<<1, 64>>>(d); break;
    default: shfl_after_exit_kernel<<<1, 32>>>(d); break;
  }
  return (int)cudaDeviceSynchronize();
}

// Block 0 waits for a flag that block 1 sets: CUDA does not promise that
// blocks run concurrently, and the simulator runs them one after another, so
// this spins forever (the caller's time limit catches it).
__global__ void wait_for_other_block_kernel(volatile int* flag) {
  if (blockIdx.x == 1 && threadIdx.x == 0) *flag = 1;
  if (blockIdx.x == 0)
    while (*flag == 0) {
    }
}

extern "C" int wait_for_other_block() {
  int* flag;
  CHECK(cudaMalloc(&flag, sizeof(int)));
  CHECK(cudaMemset(flag, 0, sizeof(int)));
  wait_for_other_block_kernel<<<2, 32>>>(flag);
  return (int)cudaDeviceSynchronize();
}

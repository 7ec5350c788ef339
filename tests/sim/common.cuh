// Shared by the simulator's test kernels: return the first CUDA error as int.
#pragma once
#include <cuda_runtime.h>

#define CHECK(call)                          \
  do {                                       \
    cudaError_t err_ = (call);               \
    if (err_ != cudaSuccess) return (int)err_; \
  } while (0)

// gpu_poison.h: the verifier's instrumentation of a candidate built for the GPU
// (transpile/verify/gpu.py compiles it with `nvcc -include gpu_poison.h`).
//
// Fresh GPU memory is zero-filled by the driver, so a kernel that accumulates
// into a buffer it never cleared (`partial[b] += ...` on a fresh cudaMalloc)
// gives the right answer on a GPU that was just started and a wrong one in any
// program that reused the memory.  Freeing a poisoned block before the call is
// only a hint to the allocator; this header makes it certain: every
// cudaMalloc / cudaMallocAsync / cudaMallocFromPoolAsync / cudaMallocPitch / cudaMalloc3D the candidate
// makes is followed by a fill with 0xFF bytes (a quiet NaN in every float
// type, -1 in every integer type), on the stream the allocation was ordered
// on.  A correct program never reads memory it did not write, so the fill
// changes nothing it computes.
//
// The fill is on while `transpile_verify_poison` is non-zero (the default);
// the worker clears it for the timing stage so that the fill is not timed.
//
// cuda_runtime.h is included first and keeps its include guard, so the
// candidate's own `#include <cuda_runtime.h>` sees the declarations unchanged;
// the macros below only rename the candidate's calls.
#ifndef TRANSPILE_GPU_POISON_H
#define TRANSPILE_GPU_POISON_H

#include <cuda_runtime.h>

extern "C" {
__attribute__((visibility("default"))) int transpile_verify_poison = 1;
}

static inline cudaError_t transpile_poisoned_malloc(void** p, size_t n)
{
  cudaError_t e = cudaMalloc(p, n);
  if (e == cudaSuccess && transpile_verify_poison && n) {
    cudaError_t f = cudaMemset(*p, 0xFF, n);
    if (f != cudaSuccess) return f;
  }
  return e;
}

template <class T>
static inline cudaError_t transpile_poisoned_malloc(T** p, size_t n)
{
  return transpile_poisoned_malloc(reinterpret_cast<void**>(p), n);
}

static inline cudaError_t transpile_poisoned_malloc_async(void** p, size_t n, cudaStream_t s)
{
  cudaError_t e = cudaMallocAsync(p, n, s);
  if (e == cudaSuccess && transpile_verify_poison && n) {
    cudaError_t f = cudaMemsetAsync(*p, 0xFF, n, s);
    if (f != cudaSuccess) return f;
  }
  return e;
}

template <class T>
static inline cudaError_t transpile_poisoned_malloc_async(T** p, size_t n, cudaStream_t s)
{
  return transpile_poisoned_malloc_async(reinterpret_cast<void**>(p), n, s);
}

template <class T>
static inline cudaError_t transpile_poisoned_malloc_async(T** p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
  cudaError_t e = cudaMallocFromPoolAsync(reinterpret_cast<void**>(p), n, pool, s);
  if (e == cudaSuccess && transpile_verify_poison && n) {
    cudaError_t f = cudaMemsetAsync(*p, 0xFF, n, s);
    if (f != cudaSuccess) return f;
  }
  return e;
}

// The drop-ins' pools (docs/dropin.md) hand back memory a previous call used: poisoned the same way.
static inline cudaError_t transpile_poisoned_malloc_from_pool(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
  cudaError_t e = cudaMallocFromPoolAsync(p, n, pool, s);
  if (e == cudaSuccess && transpile_verify_poison && n) {
    cudaError_t f = cudaMemsetAsync(*p, 0xFF, n, s);
    if (f != cudaSuccess) return f;
  }
  return e;
}

template <class T>
static inline cudaError_t transpile_poisoned_malloc_from_pool(T** p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
  return transpile_poisoned_malloc_from_pool(reinterpret_cast<void**>(p), n, pool, s);
}

static inline cudaError_t transpile_poisoned_malloc_pitch(void** p, size_t* pitch, size_t w, size_t h)
{
  cudaError_t e = cudaMallocPitch(p, pitch, w, h);
  if (e == cudaSuccess && transpile_verify_poison && w && h) {
    cudaError_t f = cudaMemset2D(*p, *pitch, 0xFF, w, h);
    if (f != cudaSuccess) return f;
  }
  return e;
}

template <class T>
static inline cudaError_t transpile_poisoned_malloc_pitch(T** p, size_t* pitch, size_t w, size_t h)
{
  return transpile_poisoned_malloc_pitch(reinterpret_cast<void**>(p), pitch, w, h);
}

static inline cudaError_t transpile_poisoned_malloc_3d(cudaPitchedPtr* p, cudaExtent x)
{
  cudaError_t e = cudaMalloc3D(p, x);
  if (e == cudaSuccess && transpile_verify_poison && x.width && x.height && x.depth) {
    cudaError_t f = cudaMemset3D(*p, 0xFF, x);
    if (f != cudaSuccess) return f;
  }
  return e;
}

#define cudaMalloc transpile_poisoned_malloc
#define cudaMallocAsync transpile_poisoned_malloc_async
#define cudaMallocFromPoolAsync transpile_poisoned_malloc_from_pool
#define cudaMallocPitch transpile_poisoned_malloc_pitch
#define cudaMalloc3D transpile_poisoned_malloc_3d

#endif

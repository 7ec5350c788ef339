// gpu_interpose.cpp: the verifier's instrumentation of a candidate built for the GPU, linked in
// beside it (transpile/verify/gpu.py), never seen by its compile.
//
// The candidate is compiled exactly as a user compiles it (`nvcc -O3 -arch=sm_90 -Xcompiler -fPIC
// -c k.cu`: no macro, no force-included header, no include path of ours).  This translation unit
// is compiled on its own and linked into the same shared library with
// `-Xlinker --wrap=cudaMalloc,...`: the linker sends every call the candidate's object makes to
// one of these functions (`__wrap_X`), which calls the runtime's own (`__real_X`, the static
// cudart's) and then fills the new memory.  Every symbol of this file is hidden and, after the
// link, removed from the library's symbol table (gpu.py), so the library exports what the
// candidate's own build exports.
//
// Why fill: fresh GPU memory tends to be zero, which hides a kernel that accumulates into a
// buffer it never cleared.  A correct program never reads memory it did not write, so no fill
// changes what it computes.  The fill is not a constant a candidate could recognise: each
// allocation draws its own from the run's seed and a counter: zeros, one random byte value,
// random bytes, NaNs with random payloads (double or float words), or random finite doubles
// or floats.
//
// The worker (gpu_worker.py) drives the fill through `fill_state`, whose address it is given
// by the parent (found with nm before the symbols are stripped): `on` non-zero fills, `seed`
// is the call's seed.  Nothing is filled unless the worker set `on` (a user loading this library
// elsewhere sees plain cudaMalloc).
//
// How each allocation is filled, without changing its ordering semantics:
//  * cudaMalloc, cudaMallocPitch, cudaMalloc3D, cudaMallocManaged: on a private non-blocking
//    stream, which is synchronised before the wrapper returns (the memory is new: nothing else
//    can be ordered against it, and no stream the candidate uses is waited for);
//  * cudaMallocAsync, cudaMallocFromPoolAsync: on the stream the allocation is ordered on
//    (stream order is the allocation's contract); while that stream is being captured into a
//    graph only a memset is used (a copy from pageable host memory cannot be captured);
//  * cudaMallocHost, cudaHostAlloc: on the host.
// The first min(n, 64 KiB) bytes are copied from a host pattern, then doubled device to device.
// A failing fill leaves the allocation as it is and clears the error it set.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>

#define HIDDEN __attribute__((visibility("hidden")))

extern "C" {
struct FillState {
  volatile uint64_t seed;
  volatile int on;
  volatile int pad;
  volatile uint64_t count;
};
HIDDEN FillState fill_state = {0, 0, 0, 0};
}

namespace {

constexpr size_t kChunk = 64 * 1024;
thread_local uint64_t pattern[kChunk / 8];
cudaStream_t side_stream[64];

uint64_t mix(uint64_t x)
{
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

enum Mode { ZEROS, BYTE, RANDOM_BYTES, NAN64, NAN32, FINITE64, FINITE32, MODES };

struct Fill {
  Mode mode;
  int byte;
  uint64_t seed;
};

// The fill of the next allocation: a zero fill one time in eight, else one of the others.
bool next_fill(Fill* f)
{
  if (!fill_state.on) return false;
  uint64_t h = mix(fill_state.seed ^ mix(__atomic_fetch_add(&fill_state.count, 1, __ATOMIC_RELAXED)));
  f->mode = (h & 7) == 0 ? ZEROS : Mode(1 + (h >> 3) % (MODES - 1));
  f->byte = int((h >> 16) & 0xFF);
  f->seed = mix(h);
  return true;
}

// A random finite double: random sign and mantissa, magnitude 2^-20 .. 2^20 (as bits).
uint64_t finite64(uint64_t r)
{
  uint64_t exp = 1023 - 20 + (r >> 52) % 41;
  return (r & 0x800FFFFFFFFFFFFFull) | (exp << 52);
}

// Fill the host pattern for f (as many bytes as needed, at most kChunk).
void make_pattern(const Fill& f, size_t n)
{
  size_t words = (n < kChunk ? n : kChunk) / 8 + 1;
  if (words > kChunk / 8) words = kChunk / 8;
  uint64_t s = f.seed;
  for (size_t i = 0; i < words; i++) {
    s = mix(s);
    uint64_t w = s;
    switch (f.mode) {
    case NAN64: w = 0x7FF0000000000001ull | (s & 0x800FFFFFFFFFFFFFull) | 0x0008000000000000ull; break;
    case NAN32: {
      uint64_t lo = 0x7FC00000u | (s & 0x803FFFFFu), hi = 0x7FC00000u | ((s >> 32) & 0x803FFFFFu);
      w = lo | (hi << 32);
      break;
    }
    case FINITE64: w = finite64(s); break;
    case FINITE32: {
      uint32_t e1 = 127 - 20 + uint32_t(s >> 24) % 41, e2 = 127 - 20 + uint32_t(s >> 56) % 41;
      uint64_t lo = (s & 0x807FFFFFu) | (uint64_t(e1) << 23), hi = ((s >> 32) & 0x807FFFFFu) | (uint64_t(e2) << 23);
      w = lo | (hi << 32);
      break;
    }
    default: break;
    }
    pattern[i] = w;
  }
}

void clear_error(cudaError_t e)
{
  if (e != cudaSuccess) (void)cudaGetLastError();
}

// Fill n bytes at device (or managed) address p, ordered on stream s.
cudaError_t fill_device(void* p, size_t n, cudaStream_t s, bool capturing)
{
  Fill f;
  if (!n || !p || !next_fill(&f)) return cudaSuccess;
  if (f.mode == ZEROS || f.mode == BYTE || capturing)
    return cudaMemsetAsync(p, f.mode == ZEROS ? 0 : f.byte, n, s);
  make_pattern(f, n);
  size_t m = n < kChunk ? n : kChunk;
  cudaError_t e = cudaMemcpyAsync(p, pattern, m, cudaMemcpyHostToDevice, s);
  for (size_t done = m; e == cudaSuccess && done < n; done *= 2) {
    size_t len = n - done < done ? n - done : done;
    e = cudaMemcpyAsync(static_cast<char*>(p) + done, p, len, cudaMemcpyDeviceToDevice, s);
  }
  return e;
}

// Fill new memory that is not stream ordered: on a private stream, waited for here.
void fill_now(void* p, size_t n)
{
  if (!fill_state.on || !n || !p) return;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return clear_error(cudaErrorInvalidDevice);
  cudaStream_t& s = side_stream[dev];
  cudaError_t e = cudaSuccess;
  if (!s) e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = fill_device(p, n, s, false);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s);
  clear_error(e);
}

void fill_ordered(void* p, size_t n, cudaStream_t s)
{
  if (!fill_state.on || !n || !p) return;
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  bool capturing = cudaStreamIsCapturing(s, &st) != cudaSuccess || st != cudaStreamCaptureStatusNone;
  clear_error(fill_device(p, n, s, capturing));
}

void fill_host(void* p, size_t n)
{
  Fill f;
  if (!n || !p || !next_fill(&f)) return;
  if (f.mode == ZEROS || f.mode == BYTE) {
    memset(p, f.mode == ZEROS ? 0 : f.byte, n);
    return;
  }
  make_pattern(f, n);
  for (size_t done = 0; done < n; done += kChunk) memcpy(static_cast<char*>(p) + done, pattern, n - done < kChunk ? n - done : kChunk);
}

}  // namespace

extern "C" {

cudaError_t __real_cudaMalloc(void**, size_t);
cudaError_t __real_cudaMallocPitch(void**, size_t*, size_t, size_t);
cudaError_t __real_cudaMalloc3D(cudaPitchedPtr*, cudaExtent);
cudaError_t __real_cudaMallocManaged(void**, size_t, unsigned int);
cudaError_t __real_cudaMallocHost(void**, size_t);
cudaError_t __real_cudaHostAlloc(void**, size_t, unsigned int);
cudaError_t __real_cudaMallocAsync(void**, size_t, cudaStream_t);
cudaError_t __real_cudaMallocAsync_ptsz(void**, size_t, cudaStream_t);
cudaError_t __real_cudaMallocFromPoolAsync(void**, size_t, cudaMemPool_t, cudaStream_t);
cudaError_t __real_cudaMallocFromPoolAsync_ptsz(void**, size_t, cudaMemPool_t, cudaStream_t);

HIDDEN cudaError_t __wrap_cudaMalloc(void** p, size_t n)
{
  cudaError_t e = __real_cudaMalloc(p, n);
  if (e == cudaSuccess) fill_now(*p, n);
  return e;
}

HIDDEN cudaError_t __wrap_cudaMallocPitch(void** p, size_t* pitch, size_t w, size_t h)
{
  cudaError_t e = __real_cudaMallocPitch(p, pitch, w, h);
  if (e == cudaSuccess) fill_now(*p, *pitch * h);
  return e;
}

HIDDEN cudaError_t __wrap_cudaMalloc3D(cudaPitchedPtr* p, cudaExtent x)
{
  cudaError_t e = __real_cudaMalloc3D(p, x);
  if (e == cudaSuccess) fill_now(p->ptr, p->pitch * x.height * x.depth);
  return e;
}

HIDDEN cudaError_t __wrap_cudaMallocManaged(void** p, size_t n, unsigned int flags)
{
  cudaError_t e = __real_cudaMallocManaged(p, n, flags);
  if (e == cudaSuccess) fill_now(*p, n);
  return e;
}

HIDDEN cudaError_t __wrap_cudaMallocHost(void** p, size_t n)
{
  cudaError_t e = __real_cudaMallocHost(p, n);
  if (e == cudaSuccess) fill_host(*p, n);
  return e;
}

HIDDEN cudaError_t __wrap_cudaHostAlloc(void** p, size_t n, unsigned int flags)
{
  cudaError_t e = __real_cudaHostAlloc(p, n, flags);
  if (e == cudaSuccess) fill_host(*p, n);
  return e;
}

HIDDEN cudaError_t __wrap_cudaMallocAsync(void** p, size_t n, cudaStream_t s)
{
  cudaError_t e = __real_cudaMallocAsync(p, n, s);
  if (e == cudaSuccess) fill_ordered(*p, n, s);
  return e;
}

HIDDEN cudaError_t __wrap_cudaMallocAsync_ptsz(void** p, size_t n, cudaStream_t s)
{
  cudaError_t e = __real_cudaMallocAsync_ptsz(p, n, s);
  if (e == cudaSuccess) fill_ordered(*p, n, s);
  return e;
}

HIDDEN cudaError_t __wrap_cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
  cudaError_t e = __real_cudaMallocFromPoolAsync(p, n, pool, s);
  if (e == cudaSuccess) fill_ordered(*p, n, s);
  return e;
}

HIDDEN cudaError_t __wrap_cudaMallocFromPoolAsync_ptsz(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s)
{
  cudaError_t e = __real_cudaMallocFromPoolAsync_ptsz(p, n, pool, s);
  if (e == cudaSuccess) fill_ordered(*p, n, s);
  return e;
}

}  // extern "C"

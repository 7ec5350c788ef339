// cuda_sim.h: a CPU simulation of the CUDA subset that transpile emits and
// that hand-written test kernels use, so CI can run the emitted .cu text with
// no GPU.  transpile/sim/build.py compiles a .cu file against this header with
// g++ after rewriting `k<<<grid, block, smem, stream>>>(args)` into
// `__sim_launch(k, __sim::LaunchConfig(grid, block, smem, stream), args)` and
// `extern __shared__ T s[];` into a pointer to the dynamic shared buffer.
//
// Execution model (see docs in transpile/sim/__init__.py):
//   * the blocks of a grid run one after another on the calling OS thread, in
//     linear order, or in a seeded random order (__sim_set_schedule);
//   * the threads of a block are cooperative fibers (ucontext, one stack each):
//     a fiber runs until it reaches __syncthreads(), a warp collective
//     (__shfl_sync & co.), a yield point (failed atomicCAS, atomicExch,
//     __nanosleep; with a seed also other atomics and fences), or its end;
//   * with seed 0 the runnable fibers resume in thread order; with a seed they
//     resume in a random order after every barrier, so a missing barrier
//     shows up as a deterministic, seed-dependent wrong result;
//   * __shared__ is `static`: one copy, shared by the fibers of the running
//     block; blocks never overlap in time, so one copy is enough; it is
//     poisoned (the fill byte, 0xFF) at the start of every block, so reading
//     shared memory the block did not write is reproducible;
//   * a barrier that can never complete (threads exited, or waiting at another
//     __syncthreads) is reported as "barrier divergence", never a hang.
//
// Only one host thread may use the simulator at a time; the file must be a
// single translation unit (the C API below is defined here).
//
// What a candidate can see of this header (docs/verify.md, "Environment detection"): it is
// force-included as nvcc force-includes cuda_runtime.h, so it defines the macros nvcc's host pass
// defines (__NVCC__, __CUDACC__, the version macros, the runtime headers' guards) and no macro of
// its own that outlives it: `#pragma once` instead of a guard, CUDA's functions (__syncthreads,
// the atomics, the runtime API) are functions, not macros, and cuda_sim_end.h (force-included
// last by build.py) removes the macros the simulator needs internally.
#pragma once

// Standard headers first: the CUDA qualifier macros below must not leak into
// them (libstdc++ spells attributes such as __noinline__ itself).
#include <algorithm>
#include <cassert>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>
#include <math.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>

// The macros nvcc 13.0 defines in its host pass (and its runtime headers' guards).
#define __NVCC__ 1
#define __CUDACC__ 1
#define __CUDACC_VER_MAJOR__ 13
#define __CUDACC_VER_MINOR__ 0
#define __CUDACC_VER_BUILD__ 88
#define __CUDA_API_VER_MAJOR__ 13
#define __CUDA_API_VER_MINOR__ 0
#define __CUDART_API_VERSION ((__CUDA_API_VER_MAJOR__ * 1000) + (__CUDA_API_VER_MINOR__ * 10))
#define __NVCC_DIAG_PRAGMA_SUPPORT__ 1
#define __CUDA_RUNTIME_H__
#define __CUDA_RUNTIME_API_H__
#define CUDART_VERSION 13000
#define CUDARTAPI
#define CUDART_CB

// SIM_RT marks the simulator's large host-side functions.  One file compiled alone (the
// default) defines them inline, as the rest.  transpile/sim/build.py instead compiles them
// once per header text and flag set into an object (CUDA_SIM_RUNTIME_OBJECT: external
// definitions, hidden in the library like everything here) and links it into each .cu's
// library, whose own translation unit (CUDA_SIM_RUNTIME_EXTERN) sees these headers with
// every SIM_RT body cut to a declaration (build.py's `declarations`) and the C API below
// only declared.  The inline variables are one object per library either way (vague
// linkage), so each library still has a simulator of its own; g++ just does not compile this
// code for every .cu file again (about half of a build).
// Convention build.py relies on: a SIM_RT definition starts at column 0 and its body ends at
// the first line that is exactly "}".
#if defined(CUDA_SIM_RUNTIME_EXTERN) || defined(CUDA_SIM_RUNTIME_OBJECT)
#define SIM_RT
#else
#define SIM_RT inline
#endif

// ---------------------------------------------------------------- qualifiers
#define __global__
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __shared__ static
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __grid_constant__
#define __align__(n) __attribute__((aligned(n)))
#define __device_builtin__
#define __cudart_builtin__
#if defined(__has_builtin)
#if !__has_builtin(__builtin_assume)
inline void __builtin_assume(bool) {}  // a function: nvcc has no such macro
#endif
#endif

// ---------------------------------------------------------------- vector types
// CUDA's types keep default visibility: GCC limits a function's visibility to
// that of the types in its signature, and the .cu file's extern "C" functions
// (returning cudaError_t, taking cudaStream_t) must stay exported.  The
// simulator's own variables and functions are hidden (pragma below).
#define SIM_VEC1(T, N) \
  struct N##1 { T x; }; \
  inline N##1 make_##N##1(T x) { return N##1{x}; }
#define SIM_VEC2(T, N, A) \
  struct __attribute__((aligned(A))) N##2 { T x, y; }; \
  inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define SIM_VEC3(T, N) \
  struct N##3 { T x, y, z; }; \
  inline N##3 make_##N##3(T x, T y, T z) { return N##3{x, y, z}; }
#define SIM_VEC4(T, N, A) \
  struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; \
  inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
#define SIM_VECS(T, N, A2, A4) SIM_VEC1(T, N) SIM_VEC2(T, N, A2) SIM_VEC3(T, N) SIM_VEC4(T, N, A4)
SIM_VECS(signed char, char, 2, 4)
SIM_VECS(unsigned char, uchar, 2, 4)
SIM_VECS(short, short, 4, 8)
SIM_VECS(unsigned short, ushort, 4, 8)
SIM_VECS(int, int, 8, 16)
SIM_VECS(unsigned int, uint, 8, 16)
SIM_VECS(long, long, 16, 16)
SIM_VECS(unsigned long, ulong, 16, 16)
SIM_VECS(long long, longlong, 16, 16)
SIM_VECS(unsigned long long, ulonglong, 16, 16)
SIM_VECS(float, float, 8, 16)
SIM_VECS(double, double, 16, 16)
#undef SIM_VECS
#undef SIM_VEC1
#undef SIM_VEC2
#undef SIM_VEC3
#undef SIM_VEC4

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

#pragma GCC visibility push(hidden)
// Built-in variables: the scheduler stores the running fiber's values here
// before resuming it.
inline uint3 threadIdx{0, 0, 0};
inline uint3 blockIdx{0, 0, 0};
inline dim3 blockDim{1, 1, 1};
inline dim3 gridDim{1, 1, 1};
inline constexpr int warpSize = 32;
#pragma GCC visibility pop

// ---------------------------------------------------------------- runtime types
enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidPitchValue = 12,
  cudaErrorInvalidSymbol = 13,
  cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorLaunchTimeout = 702,
  cudaErrorAssert = 710,
  cudaErrorHostMemoryAlreadyRegistered = 712,
  cudaErrorHostMemoryNotRegistered = 713,
  cudaErrorIllegalInstruction = 715,
  cudaErrorMisalignedAddress = 716,
  cudaErrorLaunchFailure = 719,
  cudaErrorNotPermitted = 800,
  cudaErrorNotSupported = 801,
  cudaErrorUnknown = 999,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrMaxBlockDimX = 2,
  cudaDevAttrMaxBlockDimY = 3,
  cudaDevAttrMaxBlockDimZ = 4,
  cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxGridDimY = 6,
  cudaDevAttrMaxGridDimZ = 7,
  cudaDevAttrMaxSharedMemoryPerBlock = 8,
  cudaDevAttrTotalConstantMemory = 9,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMaxRegistersPerBlock = 12,
  cudaDevAttrClockRate = 13,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrConcurrentKernels = 31,
  cudaDevAttrMemoryClockRate = 36,
  cudaDevAttrGlobalMemoryBusWidth = 37,
  cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrUnifiedAddressing = 41,
  cudaDevAttrComputeCapabilityMajor = 75,
  cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrManagedMemory = 83,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};
enum cudaFuncCache { cudaFuncCachePreferNone = 0, cudaFuncCachePreferShared = 1,
                     cudaFuncCachePreferL1 = 2, cudaFuncCachePreferEqual = 3 };
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault = 0, cudaSharedMemBankSizeFourByte = 1,
                           cudaSharedMemBankSizeEightByte = 2 };
enum cudaLimit { cudaLimitStackSize = 0, cudaLimitPrintfFifoSize = 1, cudaLimitMallocHeapSize = 2 };
enum cudaMemoryAdvise { cudaMemAdviseSetReadMostly = 1 };

#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceMapHost 0x08
#define cudaCpuDeviceId (-1)

struct CUstream_st { int id; unsigned flags; };
struct CUevent_st {
  std::chrono::steady_clock::time_point when;
  bool recorded;
  std::map<const void*, unsigned long long> clock;  // its stream's vector clock then (see __sim::order_op)
  bool queried;  // cudaEventQuery has answered "not ready" since the record
};
typedef CUstream_st* cudaStream_t;
typedef CUevent_st* cudaEvent_t;
struct CUmemPoolHandle_st { int id; unsigned long long release_threshold; };
typedef CUmemPoolHandle_st* cudaMemPool_t;
enum cudaMemAllocationType { cudaMemAllocationTypeInvalid = 0, cudaMemAllocationTypePinned = 1 };
enum cudaMemAllocationHandleType { cudaMemHandleTypeNone = 0, cudaMemHandleTypePosixFileDescriptor = 1 };
enum cudaMemLocationType { cudaMemLocationTypeInvalid = 0, cudaMemLocationTypeDevice = 1 };
struct cudaMemLocation { cudaMemLocationType type; int id; };
struct cudaMemPoolProps {
  cudaMemAllocationType allocType;
  cudaMemAllocationHandleType handleTypes;
  cudaMemLocation location;
  void* win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};
enum cudaMemPoolAttr {
  cudaMemPoolReuseFollowEventDependencies = 1, cudaMemPoolReuseAllowOpportunistic = 2,
  cudaMemPoolReuseAllowInternalDependencies = 3, cudaMemPoolAttrReleaseThreshold = 4,
  cudaMemPoolAttrReservedMemCurrent = 5, cudaMemPoolAttrReservedMemHigh = 6, cudaMemPoolAttrUsedMemCurrent = 7,
  cudaMemPoolAttrUsedMemHigh = 8
};
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2,
                      cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes { cudaMemoryType type; int device; void* devicePointer; void* hostPointer; };
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

struct cudaDeviceProp {
  char name[256];
  size_t totalGlobalMem, sharedMemPerBlock;
  int regsPerBlock, warpSize;
  size_t memPitch;
  int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
  int clockRate;
  size_t totalConstMem;
  int major, minor;
  size_t textureAlignment;
  int multiProcessorCount, integrated, canMapHostMemory, concurrentKernels, ECCEnabled;
  int memoryClockRate, memoryBusWidth, l2CacheSize, maxThreadsPerMultiProcessor;
  int unifiedAddressing, managedMemory;
  size_t sharedMemPerMultiprocessor, sharedMemPerBlockOptin;
  int regsPerMultiprocessor, maxBlocksPerMultiProcessor;
};

struct cudaFuncAttributes {
  size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA;
  int maxDynamicSharedSizeBytes, preferredShmemCarveout;
};

// ---------------------------------------------------------------- simulator state
#pragma GCC visibility push(hidden)
namespace __sim {

enum FiberState : int { kRunnable, kBarrier, kWarp, kYield, kDone, kAborted };
enum WarpOp : int {
  kSyncwarp, kShflIdx, kShflUp, kShflDown, kShflXor, kBallot, kAny, kAll,
  kMatchAny, kMatchAll, kReduceAdd, kReduceMin, kReduceMax, kReduceAnd, kReduceOr, kReduceXor,
};
inline const char* const kWarpOpNames[] = {
  "__syncwarp", "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
  "__ballot_sync", "__any_sync", "__all_sync", "__match_any_sync", "__match_all_sync",
  "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
  "__reduce_or_sync", "__reduce_xor_sync",
};

struct Fiber {
  ucontext_t ctx;  // the initial context only (see resume())
  jmp_buf jb;      // where the fiber continues once started
  bool started;
  uint3 tid;
  unsigned linear;
  int state;
  const char* bar_file;  // __syncthreads() call site, for divergence reports
  int bar_line, bar_kind, bar_pred, bar_result;
  int wop, warg, wwidth, wsize;  // pending warp collective
  unsigned wmask;
  const char* wfile;  // its call site
  int wline;
  unsigned long long wval, wres;
};

enum AllocKind : int { kDevice, kManaged, kPinned, kRegistered, kSymbol };
inline const char* const kAllocKindNames[] = {"device", "managed", "pinned host", "registered host", "symbol"};

struct Alloc {
  size_t size, guard, total;  // user bytes; front guard bytes (0: none); bytes from base
  unsigned char* base;        // what alloc_block returned: [guard][user][back guard to total]
  int kind;
  unsigned long long id;
  bool reported;  // guard corruption already reported
};

constexpr size_t kMaxDynSmem = 232448;  // H100 opt-in maximum per block
constexpr size_t kDefaultDynSmem = 49152;
alignas(256) inline unsigned char dyn_smem[kMaxDynSmem];

inline std::recursive_mutex g_mu;
inline cudaError_t g_last = cudaSuccess;    // cleared by cudaGetLastError
inline cudaError_t g_sticky = cudaSuccess;  // a kernel fault: every later call fails
inline std::string g_diag;
inline int g_diag_count = 0;
inline bool g_quiet = false;
inline bool g_ptr_check = true;
inline unsigned long long g_seed = 0;
inline unsigned long long g_rng = 0;
inline unsigned long long g_launches = 0;
inline unsigned long long g_pool_alloc_count = 0;  // cudaMallocFromPoolAsync calls that allocated
inline unsigned long long g_h2d_bytes = 0;  // bytes copied from the host to the device (checked copies)
inline size_t g_guard = 256;
inline int g_fill = 0xFF;  // poison for fresh allocations and dynamic smem; -1: none
inline bool g_fill_set = false;  // __sim_set_fill_byte was called: that byte always
inline unsigned long long g_fill_rng = 0;
inline size_t g_stack_bytes = 256 * 1024;
inline std::map<uintptr_t, Alloc> g_allocs;
inline unsigned long long g_alloc_ids = 0;
inline long long g_freed_corrupt = 0;
inline std::set<cudaStream_t> g_streams;
inline std::set<cudaEvent_t> g_events;
inline std::map<const void*, int> g_func_smem;
struct SharedVar { void* p; size_t n; const char* name; };
inline std::vector<SharedVar> g_shared;  // static __shared__ variables (see register_shared)
inline std::set<cudaMemPool_t> g_pools;
inline std::map<uintptr_t, cudaMemPool_t> g_pool_allocs;  // cudaMallocFromPoolAsync pointer -> its pool
// An asynchronous copy between the device and page-locked host memory that
// may still be running on a GPU: until a synchronisation orders it before the
// host (stream or event sync, a later blocking copy, device sync), a device
// to host copy has not landed (the simulator writes it then; the bytes are
// poisoned meanwhile) and a host to device copy may still read its source
// (the simulator copies at once and checks then that the source is unchanged).
struct Pending {
  cudaStream_t stream;
  unsigned long long tick;  // its operation on `stream` (see order_op)
  bool to_host;
  unsigned char* host;
  size_t n;
  std::vector<unsigned char> data;  // to_host: what lands; else: the source as copied
};
inline std::vector<Pending> g_pending;

// Per-launch and per-block scheduler state.
inline void (*g_thunk)(void*) = nullptr;
inline void* g_thunk_ctx = nullptr;
inline const char* g_kernel = "";
inline Fiber* g_fibers = nullptr;
inline unsigned g_fiber_cap = 0;
inline unsigned g_nthreads = 0;
inline Fiber* g_cur = nullptr;
inline ucontext_t g_sched;
inline jmp_buf g_sched_jb;
inline std::deque<unsigned> g_runq;
inline bool g_failed = false;
inline char* g_stacks = nullptr;
inline size_t g_stack_slot = 0;
inline size_t g_page = 4096;
inline char g_fault_msg[512];  // set by the fault handler, reported by the scheduler
inline unsigned g_stack_cap = 0;

inline unsigned long long next_random() {  // splitmix64
  unsigned long long z = (g_rng += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

SIM_RT std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
SIM_RT std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

SIM_RT void diagnose(const std::string& msg) {
  if (g_diag_count < 1000) {
    g_diag += msg;
    g_diag += '\n';
  }
  ++g_diag_count;
  if (!g_quiet) fprintf(stderr, "cuda-sim: %s\n", msg.c_str());
}

inline cudaError_t api_error(cudaError_t code, const std::string& msg) {
  g_last = code;
  diagnose(msg);
  return code;
}

#include "cuda_sim_race.h"
#include "cuda_sim_profile.h"

// Virtual time.  A simulated kernel is thousands of times slower than on a GPU, so a candidate
// that times an empty launch (clock64 in a kernel, cudaEventElapsedTime, or the host clocks)
// could tell it is being checked.  In the simulator every clock a program can read is virtual:
// it starts at the real time of the first read and advances only by a model of a GPU's pace
// (each read 100 ns, a launch 3 us plus 1 ns a thread, a copy 1 ns per 16 bytes; clock64 in a
// kernel 64 cycles a read).  The host functions clock_gettime, gettimeofday, time, clock and
// std::chrono's steady_clock/system_clock::now are interposed at link time (defined in this
// library, which is linked -Bsymbolic); a raw system call or rdtsc is not (docs/verify.md).
inline long long g_vclock = 0;  // virtual nanoseconds since g_vbase_*
inline long long g_vbase_mono = 0, g_vbase_real = 0;
inline unsigned long long g_vcycles = 0;
SIM_RT long long vclock_read(bool realtime, long long advance) {
  static const bool based = [] {  // once, thread-safe (the drop-in's helper threads read clocks too)
    struct timespec m, r;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &m);
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &r);
    g_vbase_mono = m.tv_sec * 1000000000ll + m.tv_nsec;
    g_vbase_real = r.tv_sec * 1000000000ll + r.tv_nsec;
    return true;
  }();
  (void)based;
  const long long now = __atomic_add_fetch(&g_vclock, advance, __ATOMIC_RELAXED);  // never backwards
  return (realtime ? g_vbase_real : g_vbase_mono) + now;
}
inline void vclock_spend(long long ns) { __atomic_add_fetch(&g_vclock, ns, __ATOMIC_RELAXED); }

// Hooks of the verifier's audit (verify_audit.h) into launches and atomics; null when absent.
struct LaunchConfig;
struct AuditLaunch {
  bool (*launch_begin)(const LaunchConfig&) = nullptr;  // true: call the block hooks of this launch
  void (*block_before)(unsigned long long) = nullptr;  // linear block index
  void (*block_after)(unsigned long long) = nullptr;
  void (*launch_end)(const LaunchConfig&) = nullptr;
  void (*atomic)(const void*, size_t) = nullptr;       // an atomic touched these bytes
};
inline AuditLaunch g_audit_launch;

// An atomic of kernel code touches [p, p + n).
__attribute__((no_sanitize_thread, always_inline)) inline void atomic_touch(const volatile void* p, size_t n) {
  race_access(p, n, kAtomic);
  if (__builtin_expect(g_prof_on, 0)) prof_atomic(p, n);
  if (g_audit_launch.atomic) g_audit_launch.atomic((const void*)p, n);
}

SIM_RT std::string where() {
  if (!g_cur) return format("kernel %s", g_kernel);
  return format("kernel %s, block (%u,%u,%u), thread (%u,%u,%u)", g_kernel, blockIdx.x, blockIdx.y,
                blockIdx.z, g_cur->tid.x, g_cur->tid.y, g_cur->tid.z);
}

// Context switches.  ucontext starts a fiber on its own stack; after that the
// switches use _setjmp/_longjmp, which (unlike swapcontext) make no
// signal-mask system call: ~10x faster for barrier-heavy kernels.  Define
// CUDA_SIM_SWAPCONTEXT to use swapcontext throughout.
inline void to_scheduler() {
#ifdef CUDA_SIM_SWAPCONTEXT
  swapcontext(&g_cur->ctx, &g_sched);
#else
  if (!_setjmp(g_cur->jb)) _longjmp(g_sched_jb, 1);
#endif
}

inline void resume(Fiber& f) {
#ifdef CUDA_SIM_SWAPCONTEXT
  swapcontext(&g_sched, &f.ctx);
#else
  if (!_setjmp(g_sched_jb)) {
    if (f.started) _longjmp(f.jb, 1);
    f.started = true;
    setcontext(&f.ctx);
  }
#endif
}

// A fault in the running kernel: sticky error, the kernel stops.  Called in a
// fiber it never returns (the fiber is abandoned); called by the scheduler it
// returns so the scheduler can unwind.
inline void kernel_fault(cudaError_t code, const std::string& msg) {
  if (!g_failed) diagnose(msg);
  g_failed = true;
  if (g_sticky == cudaSuccess) g_sticky = code;
  if (g_cur) {
    g_cur->state = kAborted;
    to_scheduler();
    abort();  // unreachable: an aborted fiber is never resumed
  }
}

inline bool seeded() { return g_seed != 0; }

inline void yield_now() {
  if (!g_cur) return;
  g_cur->state = kYield;
  to_scheduler();
}
inline void maybe_yield() {
  if (g_cur && seeded() && (next_random() & 1)) yield_now();
}

SIM_RT void fiber_main() {
  try {
    g_thunk(g_thunk_ctx);
  } catch (...) {
    kernel_fault(cudaErrorLaunchFailure, "C++ exception escaped " + where());
  }
  g_cur->state = kDone;
  to_scheduler();
  abort();
}

inline void ensure_fibers(unsigned n) {
  if (n <= g_fiber_cap) return;
  delete[] g_fibers;
  g_fibers = new Fiber[n];
  g_fiber_cap = n;
}

inline void unmap_stacks() {
  if (g_stacks) munmap(g_stacks, g_stack_slot * g_stack_cap);
  g_stacks = nullptr;
  g_stack_cap = 0;
}

inline bool ensure_stacks(unsigned n) {
  if (n <= g_stack_cap) return true;
  size_t page = g_page = (size_t)sysconf(_SC_PAGESIZE);
  size_t bytes = (std::max(g_stack_bytes, (size_t)65536) + page - 1) / page * page;
  unmap_stacks();
  g_stack_slot = bytes + page;  // one PROT_NONE guard page below each stack
  void* m = mmap(nullptr, g_stack_slot * n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (m == MAP_FAILED) return false;
  g_stacks = static_cast<char*>(m);
  for (unsigned i = 0; i < n; ++i) mprotect(g_stacks + i * g_stack_slot, page, PROT_NONE);
  g_stack_cap = n;
  return true;
}

SIM_RT void push_runnable(unsigned i) {
  g_fibers[i].state = kRunnable;
  if (seeded() && !g_runq.empty()) {
    size_t pos = next_random() % (g_runq.size() + 1);
    g_runq.insert(g_runq.begin() + (std::ptrdiff_t)pos, i);
  } else {
    g_runq.push_back(i);
  }
}

SIM_RT void push_all_shuffled(std::vector<unsigned>& ids) {
  if (seeded()) {
    for (size_t i = ids.size(); i > 1; --i) std::swap(ids[i - 1], ids[next_random() % i]);
  }
  for (unsigned i : ids) {
    g_fibers[i].state = kRunnable;
    g_runq.push_back(i);
  }
}

inline std::string tid_str(const Fiber& f) { return format("(%u,%u,%u)", f.tid.x, f.tid.y, f.tid.z); }

inline std::string block_str() {
  return format("kernel %s, block (%u,%u,%u)", g_kernel, blockIdx.x, blockIdx.y, blockIdx.z);
}

// Nothing is runnable: release the block barrier, or report why the block
// can never make progress.  Returns false when the kernel must stop.
SIM_RT bool resolve_stall(unsigned live) {
  Fiber* warp_waiter = nullptr;
  Fiber* bar_first = nullptr;
  for (unsigned i = 0; i < g_nthreads; ++i) {
    Fiber& f = g_fibers[i];
    if (f.state == kWarp && !warp_waiter) warp_waiter = &f;
    if (f.state == kBarrier && !bar_first) bar_first = &f;
  }
  if (warp_waiter) {
    Fiber& w = *warp_waiter;
    unsigned base = w.linear / 32 * 32;
    std::string why = "a lane never arrived";
    for (unsigned l = 0; l < 32 && base + l < g_nthreads; ++l) {
      if (!(w.wmask >> l & 1)) continue;
      Fiber& o = g_fibers[base + l];
      if (o.state == kDone) {
        why = format("lane %u, thread %s, has exited", l, tid_str(o).c_str());
      } else if (o.state == kBarrier) {
        why = format("lane %u, thread %s, waits at __syncthreads() (%s:%d)", l, tid_str(o).c_str(), o.bar_file,
                     o.bar_line);
      } else if (o.wop != w.wop || o.wmask != w.wmask) {
        why = format("lane %u, thread %s, waits in %s (%s:%d) with mask 0x%08x", l, tid_str(o).c_str(),
                     kWarpOpNames[o.wop], o.wfile, o.wline, o.wmask);
      } else {
        continue;
      }
      break;
    }
    kernel_fault(cudaErrorLaunchFailure,
                 format("warp divergence in %s: thread %s waits in %s (%s:%d) with mask 0x%08x, but %s",
                        block_str().c_str(), tid_str(w).c_str(), kWarpOpNames[w.wop], w.wfile, w.wline, w.wmask,
                        why.c_str()));
    return false;
  }
  // Every live fiber waits at a block barrier.
  std::vector<unsigned> ids;
  ids.reserve(live);
  for (unsigned i = 0; i < g_nthreads; ++i) {
    Fiber& f = g_fibers[i];
    if (f.state != kBarrier) continue;
    if (f.bar_line != bar_first->bar_line || std::strcmp(f.bar_file, bar_first->bar_file) != 0 ||
        f.bar_kind != bar_first->bar_kind) {
      kernel_fault(cudaErrorLaunchFailure,
                   format("barrier divergence in %s: threads wait at different barriers: %s:%d (thread %s) "
                          "and %s:%d (thread %s)",
                          block_str().c_str(), bar_first->bar_file, bar_first->bar_line,
                          tid_str(*bar_first).c_str(), f.bar_file, f.bar_line, tid_str(f).c_str()));
      return false;
    }
    ids.push_back(i);
  }
  if (live < g_nthreads) {
    const Fiber* gone = nullptr;
    for (unsigned i = 0; i < g_nthreads && !gone; ++i)
      if (g_fibers[i].state == kDone) gone = &g_fibers[i];
    kernel_fault(cudaErrorLaunchFailure,
                 format("barrier divergence in %s: %u thread(s) wait at __syncthreads() (%s:%d) but %u "
                        "thread(s) of the block exited without reaching it, e.g. thread %s",
                        block_str().c_str(), live, bar_first->bar_file, bar_first->bar_line,
                        g_nthreads - live, gone ? tid_str(*gone).c_str() : "?"));
    return false;
  }
  int count = 0;
  for (unsigned i : ids) count += g_fibers[i].bar_pred;
  int result = bar_first->bar_kind == 1 ? count
             : bar_first->bar_kind == 2 ? (count == (int)ids.size())
             : bar_first->bar_kind == 3 ? (count > 0) : 0;
  for (unsigned i : ids) g_fibers[i].bar_result = result;
  race_barrier();
  prof_barrier(ids.size());
  push_all_shuffled(ids);
  return true;
}

// Runs one block to completion; false if the kernel faulted.
SIM_RT bool run_block() {
  unsigned bx = blockDim.x, by = blockDim.y;
  unsigned n = g_nthreads;
  std::vector<unsigned> ids(n);
  for (unsigned i = 0; i < n; ++i) {
    Fiber& f = g_fibers[i];
    f.linear = i;
    f.tid = uint3{i % bx, (i / bx) % by, i / (bx * by)};
    f.state = kRunnable;
    f.started = false;
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = g_stacks + (size_t)i * g_stack_slot + g_page;  // above the guard page
    f.ctx.uc_stack.ss_size = g_stack_slot - g_page;
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, fiber_main, 0);
    ids[i] = i;
  }
  g_runq.clear();
  push_all_shuffled(ids);
  unsigned live = n;
  for (;;) {
    while (!g_runq.empty()) {
      unsigned i = g_runq.front();
      g_runq.pop_front();
      Fiber& f = g_fibers[i];
      g_cur = &f;
      threadIdx = f.tid;
      resume(f);
      g_cur = nullptr;
      if (f.state == kAborted) {
        if (g_fault_msg[0]) {  // set by on_fault()
          kernel_fault(cudaErrorIllegalAddress, g_fault_msg);
          g_fault_msg[0] = 0;
        }
        return false;
      }
      if (f.state == kDone) --live;
      else if (f.state == kYield) push_runnable(i);
    }
    if (live == 0) return true;
    if (!resolve_stall(live)) return false;
  }
}

// Fresh memory (device allocations, shared memory at the start of a block, a copy not landed yet).
// Schedule seed 0 (and an explicit __sim_set_fill_byte): the fill byte, 0xFF by default, a NaN in
// every float type, so a read of memory nothing wrote shows.  Any other seed picks the pattern by
// seed: random finite values (a random float in [1, 2) repeated; half the seeds), zeros, or random
// bytes, so a kernel cannot recognise the checker by its fill (docs/verify.md).
__attribute__((no_sanitize_thread)) inline void poison(void* p, size_t n) {
  if (g_fill < 0 || n == 0) return;
  if (g_fill_set || g_seed == 0) {
    std::memset(p, g_fill, n);
    return;
  }
  unsigned long long x = (g_fill_rng += 0x9E3779B97F4A7C15ull) ^ (g_seed * 0xD1B54A32D192ED03ull);
  auto step = [&x]() {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  switch (g_seed % 4) {
    case 0:
    case 3: {  // a random float in [1, 2) repeated: 0.0078..0.0156 read as doubles, ~1.1e9 as ints
      const uint32_t w = 0x3F800000u | (uint32_t)(step() & 0x7FFFFFu);
      unsigned char* b = static_cast<unsigned char*>(p);
      for (size_t i = 0; i < n; ++i) b[i] = (unsigned char)(w >> (8 * (i % 4)));
      break;
    }
    case 1: std::memset(p, 0, n); break;
    default: {
      unsigned char* b = static_cast<unsigned char*>(p);
      for (size_t i = 0; i < n; ++i) b[i] = (unsigned char)(step() >> 24);
    }
  }
}

// Called once per static __shared__ variable (build.py appends the call to its
// declaration); run_grid() poisons them all at the start of every block.
// Not instrumented (its poisoning is no thread's write); tracked from its first use on.
__attribute__((no_sanitize_thread)) inline bool register_shared(void* p, size_t n, const char* name = nullptr) {
  g_shared.push_back(SharedVar{p, n, name});
  poison(p, n);
  race_add_shared(p, n, name);
  prof_add_shared(p, n);
  return true;
}

// A seeded block order is never the grid's own order, and every third seed runs the blocks in
// reverse: a kernel that assumes block 0 (or any lower block) runs first fails under every seed.
inline void never_in_order(std::vector<unsigned long long>& order, unsigned long long seed) {
  bool identity = true;
  for (size_t i = 0; i < order.size() && identity; ++i) identity = order[i] == i;
  if (identity || seed % 3 == 1) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = order.size() - 1 - i;
  }
}

inline void set_block_index(unsigned long long b) {
  blockIdx = uint3{(unsigned)(b % gridDim.x), (unsigned)(b / gridDim.x % gridDim.y),
                   (unsigned)(b / ((unsigned long long)gridDim.x * gridDim.y))};
}

inline unsigned char guard_byte(size_t i) { return (unsigned char)(0xA5u ^ (unsigned)(i * 0x3Bu)); }

// Corrupted guard bytes of one allocation, with the first and last offending
// offsets relative to the start of the user region.
inline size_t corrupt_bytes(const Alloc& a, long long* first = nullptr, long long* last = nullptr) {
  if (!a.guard) return 0;
  size_t bad = 0;
  for (size_t i = 0; i < a.total; ++i) {
    if (i == a.guard) i = a.guard + a.size;  // skip the user region
    if (i >= a.total) break;
    if (a.base[i] != guard_byte(i)) {
      long long off = (long long)i - (long long)a.guard;
      if (!bad && first) *first = off;
      if (last) *last = off;
      ++bad;
    }
  }
  return bad;
}

SIM_RT void report_guards(Alloc& a, const char* when) {
  long long first = 0, last = 0;
  size_t bad = corrupt_bytes(a, &first, &last);
  if (!bad || a.reported) return;
  a.reported = true;
  diagnose(format("out-of-bounds write %s: %zu guard byte(s) of %s allocation #%llu (%zu bytes) corrupted at "
                  "offsets %lld..%lld (relative to its start)",
                  when, bad, kAllocKindNames[a.kind], a.id, a.size, first, last));
}

SIM_RT const Alloc* find_alloc(const void* p, uintptr_t* start = nullptr, bool end_inclusive = false) {
  uintptr_t q = (uintptr_t)p;
  auto it = g_allocs.upper_bound(q);
  if (it == g_allocs.begin()) return nullptr;
  --it;
  size_t size = it->second.size;
  if (q < it->first + size || q == it->first || (end_inclusive && q == it->first + size)) {
    if (start) *start = it->first;
    return &it->second;
  }
  return nullptr;
}

inline bool is_device_kind(int k) { return k == kDevice || k == kManaged || k == kSymbol; }

// [p, p+n) must lie inside device(-accessible) memory.
SIM_RT cudaError_t require_device(const void* p, size_t n, const char* api, const char* role) {
  uintptr_t start = 0;
  const Alloc* a = find_alloc(p, &start);
  if (!a || !is_device_kind(a->kind))
    return api_error(cudaErrorInvalidValue, format("%s: %s %p is not inside a device allocation", api, role, p));
  if ((uintptr_t)p + n > start + a->size)
    return api_error(cudaErrorInvalidValue,
                     format("%s: %s range of %zu bytes at offset %zu overruns %s allocation #%llu of %zu bytes",
                            api, role, n, (size_t)((uintptr_t)p - start), kAllocKindNames[a->kind], a->id,
                            a->size));
  return cudaSuccess;
}

SIM_RT cudaError_t require_host(const void* p, size_t, const char* api, const char* role) {
  const Alloc* a = find_alloc(p);
  if (a && a->kind == kDevice)
    return api_error(cudaErrorInvalidValue, format("%s: %s %p is device memory (allocation #%llu) but the copy "
                                                   "kind says host",
                                                   api, role, p, a->id));
  return cudaSuccess;
}

// Blocks of a MiB or more are mapped, not taken from malloc's heap, so that freeing one gives the memory
// back to the system at once: a long-lived process that loads many libraries (a test run) would
// otherwise keep every drop-in's staging ring and pool resident, and each fork of it copies them.
constexpr size_t kMapBytes = size_t(1) << 20;

inline unsigned char* alloc_block(size_t total) {
  if (total < kMapBytes) return static_cast<unsigned char*>(std::aligned_alloc(256, total));
  void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? nullptr : static_cast<unsigned char*>(m);  // page-aligned
}

inline void free_block(unsigned char* base, size_t total) {
  if (total < kMapBytes)
    std::free(base);
  else
    munmap(base, total);
}

SIM_RT cudaError_t allocate(void** out, size_t size, int kind, const char* api) {
  if (!out) return api_error(cudaErrorInvalidValue, format("%s: null output pointer", api));
  *out = nullptr;
  if (size == 0) return cudaSuccess;
  size_t guard = (kind == kDevice || kind == kManaged) ? g_guard : 0;
  size_t total = guard + size + guard;
  total = (total + 255) / 256 * 256;
  unsigned char* base = alloc_block(total);
  if (!base) return api_error(cudaErrorMemoryAllocation, format("%s: out of memory (%zu bytes)", api, size));
  // The back guard starts right after the last user byte and also takes the
  // rounding slack, so a write one element past the end is caught.
  if (guard)
    for (size_t i = 0; i < total; ++i) base[i] = guard_byte(i);
  unsigned char* user = base + guard;
  poison(user, size);
  g_allocs[(uintptr_t)user] = Alloc{size, guard, total, base, kind, ++g_alloc_ids, false};
  *out = user;
  return cudaSuccess;
}

SIM_RT cudaError_t release(void* p, int kind, const char* api) {
  if (!p) return cudaSuccess;
  auto it = g_allocs.find((uintptr_t)p);
  bool ok_kind = it != g_allocs.end() &&
                 (it->second.kind == kind || (kind == kDevice && it->second.kind == kManaged));
  if (!ok_kind) {
    const Alloc* inside = find_alloc(p);
    if (inside && inside->kind == kind)
      return api_error(cudaErrorInvalidValue,
                       format("%s(%p): pointer into the middle of allocation #%llu", api, p, inside->id));
    return api_error(cudaErrorInvalidValue,
                     format("%s(%p): not a live %s allocation (double free, or wrong free function?)", api, p,
                            kAllocKindNames[kind]));
  }
  Alloc& a = it->second;
  report_guards(a, format("detected at %s", api).c_str());
  g_freed_corrupt += (long long)corrupt_bytes(a);
  free_block(a.base, a.total);
  g_allocs.erase(it);
  return cudaSuccess;
}

inline bool valid_stream(cudaStream_t s) {
  return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread || g_streams.count(s);
}

inline bool null_stream(cudaStream_t s) { return s == nullptr || s == cudaStreamLegacy; }
// Whether the legacy default stream synchronises with s.
inline bool blocking_stream(cudaStream_t s) {
  return null_stream(s) || (s != cudaStreamPerThread && !(s->flags & cudaStreamNonBlocking));
}

// Stream order.  Work on two streams is unordered unless an event, a host
// synchronisation or the legacy default stream orders it, and on a GPU two
// unordered operations on the same device buffer race when one of them writes.
// The simulator runs every operation when it is issued, so such a race would
// go unseen: each stream (and the host) carries a vector clock, and every
// access to a device allocation is checked against the allocation's last write
// and the reads since, by allocation (a kernel's pointer-to-const arguments
// read, its other pointer arguments write if the launch changed the
// allocation; copies, memsets, stream-ordered allocation and free as their
// kind says).
using Clock = std::map<const void*, unsigned long long>;  // stream key -> its last operation known done
struct Access {
  const void* stream = nullptr;
  unsigned long long tick = 0;  // 0: none
  std::string what;
};
struct Uses {
  Access write;
  std::vector<Access> reads;  // since the write, the latest per stream
};
inline std::map<const void*, Clock> g_clock;  // per stream key
inline Clock g_host_clock;
inline std::map<unsigned long long, Uses> g_uses;  // per device allocation id
inline const void* stream_key(cudaStream_t s) {
  if (null_stream(s)) return nullptr;
  if (s == cudaStreamPerThread) return (const void*)cudaStreamPerThread;
  return s;
}
inline std::string stream_name(const void* key) {
  if (key == nullptr) return "the legacy default stream";
  if (key == (const void*)cudaStreamPerThread) return "the per-thread default stream";
  return format("stream #%d", static_cast<const CUstream_st*>(key)->id);
}
SIM_RT void join(Clock& into, const Clock& from) {
  for (const auto& kv : from) {
    unsigned long long& t = into[kv.first];
    if (t < kv.second) t = kv.second;
  }
}
// Issues an operation on `s`: it follows what the host has seen finish and, by the legacy default
// stream's rules, that stream's work (or, on it, the blocking streams' work).  Returns its tick.
SIM_RT unsigned long long order_op(cudaStream_t s) {
  const void* key = stream_key(s);
  Clock& c = g_clock[key];
  join(c, g_host_clock);
  if (key == nullptr) {
    for (cudaStream_t t : g_streams)
      if (blocking_stream(t)) join(c, g_clock[t]);
  } else if (blocking_stream(s)) {
    join(c, g_clock[nullptr]);
  }
  return ++c[key];
}
inline void settle_seen();  // with the pending copies, below
// The host has seen the work `c` covers finish: its clock joins `c` and the copies it covers land.
inline void host_sees(const Clock& c) {
  join(g_host_clock, c);
  settle_seen();
}
// The host waited for everything issued so far on `s` (on the legacy stream: and the blocking streams).
SIM_RT void host_waits(cudaStream_t s) {
  join(g_host_clock, g_clock[stream_key(s)]);
  if (stream_key(s) == nullptr)
    for (cudaStream_t t : g_streams)
      if (blocking_stream(t)) join(g_host_clock, g_clock[t]);
  settle_seen();
}
inline void host_waits_all() {
  for (const auto& kv : g_clock) join(g_host_clock, kv.second);
  settle_seen();
}
inline bool ordered_before(const Access& a, const void* key, const Clock& c) {
  if (a.tick == 0 || a.stream == key) return true;
  auto it = c.find(a.stream);
  return it != c.end() && it->second >= a.tick;
}
// The operation `what` (tick `tick` on `s`) reads or writes the device allocation holding `p`.
SIM_RT void use(const void* p, bool write, cudaStream_t s, unsigned long long tick, const std::string& what) {
  const Alloc* a = find_alloc(p);
  if (!a || a->kind != kDevice) return;
  const void* key = stream_key(s);
  const Clock& c = g_clock[key];
  Uses& u = g_uses[a->id];
  auto race = [&](const Access& earlier, const char* how) {
    diagnose(format("race on device allocation #%llu (%zu bytes): %s on %s is not ordered after %s (%s on %s); "
                    "make one stream wait for the other (cudaEventRecord + cudaStreamWaitEvent)",
                    a->id, a->size, what.c_str(), stream_name(key).c_str(), earlier.what.c_str(), how,
                    stream_name(earlier.stream).c_str()));
  };
  if (!ordered_before(u.write, key, c)) race(u.write, "a write");
  if (write) {
    for (const Access& r : u.reads)
      if (!ordered_before(r, key, c)) race(r, "a read");
    u.write = Access{key, tick, what};
    u.reads.clear();
    return;
  }
  for (Access& r : u.reads)
    if (r.stream == key) {
      r = Access{key, tick, what};
      return;
    }
  u.reads.push_back(Access{key, tick, what});
}
inline void forget_uses(const void* p) {
  const Alloc* a = find_alloc(p);
  if (a) g_uses.erase(a->id);
}

struct LaunchConfig {
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
  const char* name = "<kernel>";
  const char* file = "";
  int line = 0;
  LaunchConfig(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = nullptr) : grid(g), block(b), smem(s), stream(st) {}
  LaunchConfig& at(const char* n, const char* f, int l) {
    name = n;
    file = f;
    line = l;
    return *this;
  }
};

SIM_RT cudaError_t validate_launch(const LaunchConfig& c, const void* key) {
  if (g_sticky) return g_last = g_sticky;
  const dim3 &g = c.grid, &b = c.block;
  unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
  if (!g.x || !g.y || !g.z || !b.x || !b.y || !b.z || threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64 ||
      g.x > 2147483647u || g.y > 65535 || g.z > 65535)
    return api_error(cudaErrorInvalidConfiguration,
                     format("launch of %s at %s:%d: invalid configuration grid (%u,%u,%u) block (%u,%u,%u)",
                            c.name, c.file, c.line, g.x, g.y, g.z, b.x, b.y, b.z));
  auto it = g_func_smem.find(key);
  size_t limit = it == g_func_smem.end() ? kDefaultDynSmem : (size_t)it->second;
  if (c.smem > limit)
    return api_error(cudaErrorInvalidValue,
                     format("launch of %s at %s:%d: %zu bytes of dynamic shared memory exceed the limit of %zu "
                            "(raise it with cudaFuncSetAttribute(..., "
                            "cudaFuncAttributeMaxDynamicSharedMemorySize, ...))",
                            c.name, c.file, c.line, c.smem, limit));
  if (!valid_stream(c.stream))
    return api_error(cudaErrorInvalidResourceHandle,
                     format("launch of %s at %s:%d: invalid stream", c.name, c.file, c.line));
  return cudaSuccess;
}

inline bool check_pointer_arg(const LaunchConfig& c, int index, const void* p) {
  if (!g_ptr_check || !p) return true;
  const Alloc* a = find_alloc(p, nullptr, true);
  if (a) return true;
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  diagnose(format("launch of %s at %s:%d: argument %d (%p) is not device-accessible memory (a host pointer?)",
                  c.name, c.file, c.line, index, p));
  if (!g_sticky) g_sticky = cudaErrorIllegalAddress;
  g_last = g_sticky;
  return false;
}

template <class T>
bool check_arg(const LaunchConfig& c, int index, const T& v) {
  if constexpr (std::is_pointer_v<T>) {
    if constexpr (std::is_object_v<std::remove_pointer_t<T>>) return check_pointer_arg(c, index, (const void*)v);
  }
  return true;
}

// A kernel's pointer arguments, for the stream-order check (see __sim::use): a pointer to const
// reads its allocation; any other pointer writes it if the launch changed the allocation's bytes
// (a kernel may take a non-const pointer it only reads: two such launches on two streams do not race).
struct ArgUse {
  const void* p;
  bool read_only;
  unsigned long long hash;  // of the allocation's bytes before the launch
};
inline unsigned long long alloc_hash(const void* p) {
  const Alloc* a = find_alloc(p);
  if (!a || a->kind != kDevice) return 0;
  const unsigned char* b = a->base + a->guard;
  unsigned long long h = 1469598103934665603ull;  // FNV-1a over 8-byte words, then the tail
  size_t i = 0;
  for (; i + 8 <= a->size; i += 8) {
    unsigned long long w;
    std::memcpy(&w, b + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < a->size; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}
template <class T>
void arg_use(std::vector<ArgUse>& out, const T& v) {
  if constexpr (std::is_pointer_v<T>) {
    if constexpr (std::is_object_v<std::remove_pointer_t<T>>) {
      const bool ro = std::is_const_v<std::remove_pointer_t<T>>;
      if (v) out.push_back(ArgUse{(const void*)v, ro, ro ? 0 : alloc_hash((const void*)v)});
    }
  }
}
template <class Tup, size_t... I>
std::vector<ArgUse> arg_uses(const Tup& t, std::index_sequence<I...>) {
  std::vector<ArgUse> out;
  (arg_use(out, std::get<I>(t)), ...);
  return out;
}
SIM_RT void use_args(const LaunchConfig& c, unsigned long long tick, const std::vector<ArgUse>& uses) {
  const std::string what = format("the launch of %s at %s:%d", c.name, c.file, c.line);
  for (const ArgUse& u : uses) use(u.p, !u.read_only && alloc_hash(u.p) != u.hash, c.stream, tick, what);
}

template <class Tup, size_t... I>
bool check_args(const LaunchConfig& c, const Tup& t, std::index_sequence<I...>) {
  return (check_arg(c, (int)I, std::get<I>(t)) && ... && true);
}

inline void scan_guards_after(const char* kernel) {
  for (auto& kv : g_allocs) report_guards(kv.second, format("by kernel %s", kernel).c_str());
}

// A memory fault inside a fiber (an access far outside any allocation, or a
// fiber stack overflow) becomes cudaErrorIllegalAddress for the launch, as on a
// GPU, instead of killing the host process.  The handler runs on its own
// signal stack and resumes the scheduler; faults outside kernels go to the
// previous handler.
inline struct sigaction g_old_segv, g_old_bus;
inline stack_t g_old_altstack;
alignas(16) inline char g_altstack[1 << 16];
SIM_RT void on_fault(int sig, siginfo_t* info, void*) {
  if (!g_cur) {  // not in a kernel: let the previous handler see it
    sigaction(SIGSEGV, &g_old_segv, nullptr);
    sigaction(SIGBUS, &g_old_bus, nullptr);
    return;
  }
  uintptr_t a = (uintptr_t)info->si_addr, s0 = (uintptr_t)g_stacks;
  bool overflow = g_stacks && a >= s0 && a < s0 + g_stack_slot * g_stack_cap && (a - s0) % g_stack_slot < g_page;
  // Only async-signal-safe formatting here; diagnose() runs back in the scheduler.
  snprintf(g_fault_msg, sizeof g_fault_msg,
           overflow ? "stack overflow in kernel %s, block (%u,%u,%u), thread (%u,%u,%u): raise TRANSPILE_SIM_STACK_KB"
                    : "illegal address in kernel %s, block (%u,%u,%u), thread (%u,%u,%u): %s at %p",
           g_kernel, blockIdx.x, blockIdx.y, blockIdx.z, g_cur->tid.x, g_cur->tid.y, g_cur->tid.z,
           sig == SIGBUS ? "bus error" : "segmentation fault", info->si_addr);
  g_cur->state = kAborted;
#ifdef CUDA_SIM_SWAPCONTEXT
  setcontext(&g_sched);  // back into run_block(), which sees kAborted
#else
  _longjmp(g_sched_jb, 1);  // SA_NODEFER: the signal is not left blocked
#endif
}

struct FaultGuard {
  FaultGuard() {
    stack_t ss{};
    ss.ss_sp = g_altstack;
    ss.ss_size = sizeof g_altstack;
    sigaltstack(&ss, &g_old_altstack);
    struct sigaction sa{};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_old_segv);
    sigaction(SIGBUS, &sa, &g_old_bus);
  }
  ~FaultGuard() {
    sigaction(SIGSEGV, &g_old_segv, nullptr);
    sigaction(SIGBUS, &g_old_bus, nullptr);
    sigaltstack(&g_old_altstack, nullptr);
  }
};

SIM_RT cudaError_t run_grid(const LaunchConfig& c, void (*thunk)(void*), void* ctx) {
  ++g_launches;
  vclock_spend(3000 + (long long)c.grid.x * c.grid.y * c.grid.z * c.block.x * c.block.y * c.block.z);
  g_rng = g_seed * 0x2545F4914F6CDD1Dull + g_launches;
  unsigned n = c.block.x * c.block.y * c.block.z;
  ensure_fibers(n);
  if (!ensure_stacks(n))
    return api_error(cudaErrorMemoryAllocation, format("launch of %s: cannot map fiber stacks", c.name));
  g_thunk = thunk;
  g_thunk_ctx = ctx;
  g_kernel = c.name;
  g_nthreads = n;
  g_failed = false;
  gridDim = c.grid;
  blockDim = c.block;
  unsigned long long nb = (unsigned long long)c.grid.x * c.grid.y * c.grid.z;
  // Block order: identity, or a seeded permutation (explicit for small grids,
  // an affine bijection b -> (a*b + s) mod nb for huge ones).
  std::vector<unsigned long long> order;
  unsigned long long mul = 1, add = 0;
  if (seeded()) {
    if (nb <= (1ull << 20)) {
      order.resize(nb);
      for (unsigned long long i = 0; i < nb; ++i) order[i] = i;
      for (unsigned long long i = nb; i > 1; --i) std::swap(order[i - 1], order[next_random() % i]);
      never_in_order(order, g_seed);
    } else {
      add = next_random() % nb;
      do mul = next_random() % nb | 1; while (std::gcd(mul, nb) != 1);
    }
  }
  race_launch_begin(n);
  prof_launch_begin(c.name, c.grid, c.block, c.smem, n);
  const bool audited = g_audit_launch.launch_begin && g_audit_launch.launch_begin(c);
  FaultGuard fault_guard;
  g_fault_msg[0] = 0;
  for (unsigned long long k = 0; k < nb && !g_failed; ++k) {
    unsigned long long b = order.empty() ? (unsigned long long)(((unsigned __int128)k * mul + add) % nb) : order[k];
    set_block_index(b);
    if (g_fill >= 0) {
      if (c.smem) poison(dyn_smem, c.smem);
      for (const SharedVar& v : g_shared) poison(v.p, v.n);
    }
    if (audited) g_audit_launch.block_before(b);
    race_block_begin(b);
    prof_block_begin();
    const bool ok = run_block();
    race_block_end();
    prof_block_end();
    if (audited) g_audit_launch.block_after(b);
    if (!ok) break;
  }
  if (audited) g_audit_launch.launch_end(c);
  g_cur = nullptr;
  threadIdx = uint3{0, 0, 0};
  scan_guards_after(c.name);
  return g_sticky;
}

template <class K, class Tup>
struct Invocation {
  K kernel;
  Tup* params;
};

template <class K, class Tup>
void invoke(void* p) {
  auto* inv = static_cast<Invocation<K, Tup>*>(p);
  std::apply(inv->kernel, *inv->params);  // copies: each thread owns its parameters
}

template <class... P>
cudaError_t launch_tuple(void (*kernel)(P...), const LaunchConfig& c, std::tuple<std::decay_t<P>...>& params) {
  std::lock_guard<std::recursive_mutex> lock(g_mu);
  if (g_cur) {  // build.py rejects this; a hand-made build might not
    kernel_fault(cudaErrorNotSupported, "dynamic parallelism (a launch of " + std::string(c.name) + " inside " +
                                            where() + ") is not simulated");
  }
  const void* key = reinterpret_cast<const void*>(kernel);
  if (cudaError_t e = validate_launch(c, key)) return e;
  if (!check_args(c, params, std::index_sequence_for<P...>{})) return g_sticky;
  const unsigned long long tick = order_op(c.stream);
  const std::vector<ArgUse> uses = arg_uses(params, std::index_sequence_for<P...>{});
  g_race_args.clear();
  for (const ArgUse& u : uses) g_race_args.push_back(u.p);
  using Tup = std::tuple<std::decay_t<P>...>;
  Invocation<void (*)(P...), Tup> inv{kernel, &params};
  const cudaError_t e = run_grid(c, &invoke<void (*)(P...), Tup>, &inv);
  use_args(c, tick, uses);
  return e;
}

// --- barriers and warp collectives (called from kernel code)

inline int syncthreads_at(const char* file, int line, int kind, int pred) {
  if (!g_cur) return pred != 0;  // host code: a one-thread block
  Fiber& me = *g_cur;
  me.state = kBarrier;
  me.bar_file = file;
  me.bar_line = line;
  me.bar_kind = kind;
  me.bar_pred = pred != 0;
  to_scheduler();
  return me.bar_result;
}

inline unsigned lanes_present(unsigned warp) {
  unsigned base = warp * 32;
  unsigned k = g_nthreads - base >= 32 ? 32 : g_nthreads - base;
  return k == 32 ? 0xFFFFFFFFu : ((1u << k) - 1);
}

SIM_RT void complete_warp(unsigned base, unsigned mask) {
  Fiber* lanes[32] = {};
  for (unsigned l = 0; l < 32; ++l)
    if (mask >> l & 1) lanes[l] = &g_fibers[base + l];
  Fiber& first = *lanes[__builtin_ctz(mask)];
  int op = first.wop;
  unsigned ballot = 0;
  for (unsigned l = 0; l < 32; ++l)
    if (lanes[l] && lanes[l]->wval) ballot |= 1u << l;
  for (unsigned l = 0; l < 32; ++l) {
    if (!lanes[l]) continue;
    Fiber& f = *lanes[l];
    unsigned w = (unsigned)f.wwidth;
    unsigned seg = l & ~(w - 1);
    long long src = l;
    unsigned long long r = f.wval;
    switch (op) {
      case kShflIdx: src = seg + ((unsigned)f.warg & (w - 1)); break;
      case kShflUp: src = (l - seg) >= (unsigned)f.warg ? (long long)l - f.warg : l; break;
      case kShflDown: src = (l - seg) + (unsigned)f.warg < w ? (long long)l + f.warg : l; break;
      case kShflXor: src = l ^ (unsigned)f.warg; if (src >= (long long)(seg + w)) src = l; break;
      case kBallot: r = ballot; break;
      case kAny: r = ballot != 0; break;
      case kAll: r = ballot == mask; break;
      case kMatchAny:
      case kMatchAll: {
        unsigned same = 0;
        for (unsigned m = 0; m < 32; ++m)
          if (lanes[m] && lanes[m]->wval == f.wval) same |= 1u << m;
        r = op == kMatchAny ? same : (same == mask ? mask : 0);
        break;
      }
      default: {  // reductions over 32-bit values; warg != 0: signed
        unsigned long long acc = 0;
        bool init = false;
        for (unsigned m = 0; m < 32; ++m) {
          if (!lanes[m]) continue;
          unsigned v = (unsigned)lanes[m]->wval;
          if (!init) { acc = v; init = true; continue; }
          unsigned a = (unsigned)acc;
          switch (op) {
            case kReduceAdd: a += v; break;
            case kReduceMin: a = f.warg ? (unsigned)std::min((int)a, (int)v) : std::min(a, v); break;
            case kReduceMax: a = f.warg ? (unsigned)std::max((int)a, (int)v) : std::max(a, v); break;
            case kReduceAnd: a &= v; break;
            case kReduceOr: a |= v; break;
            case kReduceXor: a ^= v; break;
          }
          acc = a;
        }
        r = acc;
      }
    }
    if (op >= kShflIdx && op <= kShflXor) {
      // A source lane outside the mask (or absent) is undefined in CUDA: own value.
      r = (src >= 0 && src < 32 && lanes[src]) ? lanes[src]->wval : f.wval;
    }
    f.wres = r;
  }
}

// Arrive at a warp collective; returns this lane's result.
SIM_RT unsigned long long warp_op(int op, unsigned mask, unsigned long long val, int arg, int width,
                                  const char* file, int line) {
  if (!g_cur) {
    if (op == kBallot) return val ? 1 : 0;
    if (op == kMatchAny || op == kMatchAll) return 1;
    return val;
  }
  Fiber& me = *g_cur;
  unsigned lane = me.linear % 32, base = me.linear - lane;
  if (width <= 0 || width > 32 || (width & (width - 1)))
    kernel_fault(cudaErrorLaunchFailure, format("%s in %s: width %d is not a power of two <= 32",
                                                kWarpOpNames[op], where().c_str(), width));
  mask &= lanes_present(me.linear / 32);
  if (!(mask >> lane & 1))
    kernel_fault(cudaErrorLaunchFailure, format("%s in %s: mask 0x%08x does not include the calling lane %u",
                                                kWarpOpNames[op], where().c_str(), mask, lane));
  me.state = kWarp;
  me.wop = op;
  me.wmask = mask;
  me.wval = val;
  me.warg = arg;
  me.wwidth = width;
  me.wfile = file;
  me.wline = line;
  bool complete = true;
  for (unsigned l = 0; l < 32 && complete; ++l) {
    if (!(mask >> l & 1)) continue;
    const Fiber& o = g_fibers[base + l];
    complete = o.state == kWarp && o.wop == op && o.wmask == mask;
  }
  if (complete) {
    complete_warp(base, mask);
    race_warp_sync(base / 32);
    for (unsigned l = 0; l < 32; ++l)
      if ((mask >> l & 1) && l != lane) push_runnable(base + l);
    me.state = kRunnable;
    maybe_yield();
  } else {
    to_scheduler();
  }
  return me.wres;
}

template <class T>
unsigned long long to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp shuffles move at most 8 bytes");
  unsigned long long b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <class T>
T from_bits(unsigned long long b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

template <class T>
struct Id { using type = T; };

inline void after_atomic() { maybe_yield(); }

inline long long clock_ns() { return vclock_read(false, 100); }

SIM_RT void read_env() {
  if (const char* s = getenv("TRANSPILE_SIM_SEED")) g_seed = strtoull(s, nullptr, 0);
  if (const char* s = getenv("TRANSPILE_SIM_GUARD_BYTES")) g_guard = (strtoull(s, nullptr, 0) + 255) / 256 * 256;
  if (const char* s = getenv("TRANSPILE_SIM_STACK_KB")) g_stack_bytes = strtoull(s, nullptr, 0) * 1024;
  if (const char* s = getenv("TRANSPILE_SIM_QUIET")) g_quiet = *s && *s != '0';
  if (const char* s = getenv("TRANSPILE_SIM_RACE")) g_race_on = !(*s == '0' && !s[1]);  // 0: no race detection
}
static const bool g_env_read = (read_env(), true);  // static: always initialized

}  // namespace __sim

// ---------------------------------------------------------------- kernel launch
template <class... P, class... A>
void __sim_launch(void (*kernel)(P...), const __sim::LaunchConfig& c, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "cuda-sim: kernel launched with the wrong number of arguments");
  auto params = std::tuple<std::decay_t<P>...>(std::forward<A>(args)...);
  __sim::launch_tuple(kernel, c, params);
}

template <class... P, size_t... I>
std::tuple<std::decay_t<P>...> __sim_unpack_args(void** args, std::index_sequence<I...>) {
  return std::tuple<std::decay_t<P>...>(*static_cast<std::decay_t<P>*>(args[I])...);
}

template <class... P>
cudaError_t cudaLaunchKernel(void (*kernel)(P...), dim3 grid, dim3 block, void** args, size_t smem = 0,
                             cudaStream_t stream = nullptr) {
  auto params = __sim_unpack_args<P...>(args, std::index_sequence_for<P...>{});
  return __sim::launch_tuple(kernel, __sim::LaunchConfig(grid, block, smem, stream).at("cudaLaunchKernel", "", 0),
                             params);
}

// ---------------------------------------------------------------- barriers, warps
// Functions, as in CUDA (a macro would tell the simulator build); the call site comes from the
// default arguments (GCC builtins honour #line).
inline void __syncthreads(const char* f = __builtin_FILE(), int l = __builtin_LINE()) {
  __sim::syncthreads_at(f, l, 0, 0);
}
inline int __syncthreads_count(int p, const char* f = __builtin_FILE(), int l = __builtin_LINE()) {
  return __sim::syncthreads_at(f, l, 1, p);
}
inline int __syncthreads_and(int p, const char* f = __builtin_FILE(), int l = __builtin_LINE()) {
  return __sim::syncthreads_at(f, l, 2, p);
}
inline int __syncthreads_or(int p, const char* f = __builtin_FILE(), int l = __builtin_LINE()) {
  return __sim::syncthreads_at(f, l, 3, p);
}

// The trailing file/line parameters default to the call site (GCC builtins
// honour #line), for divergence reports.
#define SIM_SITE const char* sim_file_ = __builtin_FILE(), int sim_line_ = __builtin_LINE()
#define SIM_AT sim_file_, sim_line_
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu, SIM_SITE) { __sim::warp_op(__sim::kSyncwarp, mask, 0, 0, 32, SIM_AT); }
template <class T>
T __shfl_sync(unsigned mask, T v, int src, int width = 32, SIM_SITE) {
  return __sim::from_bits<T>(__sim::warp_op(__sim::kShflIdx, mask, __sim::to_bits(v), src, width, SIM_AT));
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32, SIM_SITE) {
  return __sim::from_bits<T>(__sim::warp_op(__sim::kShflUp, mask, __sim::to_bits(v), (int)delta, width, SIM_AT));
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32, SIM_SITE) {
  return __sim::from_bits<T>(__sim::warp_op(__sim::kShflDown, mask, __sim::to_bits(v), (int)delta, width, SIM_AT));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32, SIM_SITE) {
  return __sim::from_bits<T>(__sim::warp_op(__sim::kShflXor, mask, __sim::to_bits(v), lane_mask, width, SIM_AT));
}
inline unsigned __ballot_sync(unsigned mask, int pred, SIM_SITE) {
  return (unsigned)__sim::warp_op(__sim::kBallot, mask, pred != 0, 0, 32, SIM_AT);
}
inline int __any_sync(unsigned mask, int pred, SIM_SITE) { return (int)__sim::warp_op(__sim::kAny, mask, pred != 0, 0, 32, SIM_AT); }
inline int __all_sync(unsigned mask, int pred, SIM_SITE) { return (int)__sim::warp_op(__sim::kAll, mask, pred != 0, 0, 32, SIM_AT); }
template <class T>
unsigned __match_any_sync(unsigned mask, T v, SIM_SITE) {
  return (unsigned)__sim::warp_op(__sim::kMatchAny, mask, __sim::to_bits(v), 0, 32, SIM_AT);
}
template <class T>
unsigned __match_all_sync(unsigned mask, T v, int* pred, SIM_SITE) {
  unsigned r = (unsigned)__sim::warp_op(__sim::kMatchAll, mask, __sim::to_bits(v), 0, 32, SIM_AT);
  *pred = r != 0;
  return r;
}
#define SIM_WARP_REDUCE(NAME, OP)                                                                 \
  inline unsigned NAME(unsigned mask, unsigned v, SIM_SITE) {                                     \
    return (unsigned)__sim::warp_op(__sim::OP, mask, v, 0, 32, SIM_AT);                                   \
  }                                                                                               \
  inline int NAME(unsigned mask, int v, SIM_SITE) {                                               \
    return (int)(unsigned)__sim::warp_op(__sim::OP, mask, (unsigned)v, 1, 32, SIM_AT);                    \
  }
SIM_WARP_REDUCE(__reduce_add_sync, kReduceAdd)
SIM_WARP_REDUCE(__reduce_min_sync, kReduceMin)
SIM_WARP_REDUCE(__reduce_max_sync, kReduceMax)
#undef SIM_WARP_REDUCE
inline unsigned __reduce_and_sync(unsigned mask, unsigned v, SIM_SITE) {
  return (unsigned)__sim::warp_op(__sim::kReduceAnd, mask, v, 0, 32, SIM_AT);
}
inline unsigned __reduce_or_sync(unsigned mask, unsigned v, SIM_SITE) {
  return (unsigned)__sim::warp_op(__sim::kReduceOr, mask, v, 0, 32, SIM_AT);
}
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v, SIM_SITE) {
  return (unsigned)__sim::warp_op(__sim::kReduceXor, mask, v, 0, 32, SIM_AT);
}
inline unsigned __activemask() {
  if (!__sim::g_cur) return 1;
  unsigned lane = __sim::g_cur->linear % 32, base = __sim::g_cur->linear - lane, m = 0;
  for (unsigned l = 0; l < 32 && base + l < __sim::g_nthreads; ++l)
    if (__sim::g_fibers[base + l].state != __sim::kDone) m |= 1u << l;
  return m;
}

#undef SIM_SITE
#undef SIM_AT

inline void __threadfence() { __sim::race_fence(); __sim::maybe_yield(); }
inline void __threadfence_block() { __sim::race_fence(); __sim::maybe_yield(); }
inline void __threadfence_system() { __sim::race_fence(); __sim::maybe_yield(); }
inline void __nanosleep(unsigned) { __sim::yield_now(); }
inline long long clock64() { return (long long)(__sim::g_vcycles += 64); }
inline void __trap() {
  __sim::kernel_fault(cudaErrorLaunchFailure, "__trap() in " + __sim::where());
  abort();
}
inline void __brkpt() {}

// ---------------------------------------------------------------- atomics
// Fibers never run concurrently and are only switched at explicit points, so a
// plain read-modify-write is atomic.  A failed atomicCAS and atomicExch yield,
// so spin locks make progress; with a seed, other atomics may yield too.
// Compiled without the race instrumentation (their plain accesses are atomic here): each records
// itself as an atomic access instead (cuda_sim_race.h).
#define SIM_ATOMIC_FN __attribute__((no_sanitize_thread))
#define SIM_ATOMIC_RMW(NAME, EXPR)                                          \
  template <class T> SIM_ATOMIC_FN T NAME(T* a, typename __sim::Id<T>::type v) { \
    __sim::atomic_touch(a, sizeof(T));                        \
    T o = *a;                                                                \
    *a = EXPR;                                                               \
    __sim::after_atomic();                                                   \
    return o;                                                                \
  }
SIM_ATOMIC_RMW(atomicAdd, o + v)
SIM_ATOMIC_RMW(atomicSub, o - v)
SIM_ATOMIC_RMW(atomicMax, o < v ? v : o)
SIM_ATOMIC_RMW(atomicMin, v < o ? v : o)
SIM_ATOMIC_RMW(atomicAnd, o & v)
SIM_ATOMIC_RMW(atomicOr, o | v)
SIM_ATOMIC_RMW(atomicXor, o ^ v)
#undef SIM_ATOMIC_RMW
template <class T> SIM_ATOMIC_FN T atomicExch(T* a, typename __sim::Id<T>::type v) {
  __sim::atomic_touch(a, sizeof(T));
  T o = *a;
  *a = v;
  __sim::race_lock(a, true, true);
  __sim::yield_now();
  return o;
}
template <class T> SIM_ATOMIC_FN T atomicCAS(T* a, typename __sim::Id<T>::type cmp, typename __sim::Id<T>::type v) {
  __sim::atomic_touch(a, sizeof(T));
  T o = *a;
  __sim::race_lock(a, false, o == cmp);
  if (o == cmp) { *a = v; __sim::after_atomic(); }
  else __sim::yield_now();
  return o;
}
inline SIM_ATOMIC_FN unsigned atomicInc(unsigned* a, unsigned v) {
  __sim::atomic_touch(a, sizeof(unsigned));
  unsigned o = *a; *a = o >= v ? 0 : o + 1; __sim::after_atomic(); return o;
}
inline SIM_ATOMIC_FN unsigned atomicDec(unsigned* a, unsigned v) {
  __sim::atomic_touch(a, sizeof(unsigned));
  unsigned o = *a; *a = (o == 0 || o > v) ? v : o - 1; __sim::after_atomic(); return o;
}
#undef SIM_ATOMIC_FN
#define SIM_ATOMIC_SCOPES(NAME) \
  template <class T, class... A> T NAME##_block(T* a, A... v) { return NAME(a, v...); } \
  template <class T, class... A> T NAME##_system(T* a, A... v) { return NAME(a, v...); }
SIM_ATOMIC_SCOPES(atomicAdd) SIM_ATOMIC_SCOPES(atomicSub) SIM_ATOMIC_SCOPES(atomicMax)
SIM_ATOMIC_SCOPES(atomicMin) SIM_ATOMIC_SCOPES(atomicAnd) SIM_ATOMIC_SCOPES(atomicOr)
SIM_ATOMIC_SCOPES(atomicXor) SIM_ATOMIC_SCOPES(atomicExch) SIM_ATOMIC_SCOPES(atomicCAS)
SIM_ATOMIC_SCOPES(atomicInc) SIM_ATOMIC_SCOPES(atomicDec)
#undef SIM_ATOMIC_SCOPES

// ---------------------------------------------------------------- loads / stores
template <class T> T __ldg(const T* p) { return *p; }
template <class T> T __ldcg(const T* p) { return *p; }
template <class T> T __ldca(const T* p) { return *p; }
template <class T> T __ldcs(const T* p) { return *p; }
template <class T> T __ldlu(const T* p) { return *p; }
template <class T> T __ldcv(const T* p) { return *p; }
template <class T> void __stwb(T* p, T v) { *p = v; }
template <class T> void __stcg(T* p, T v) { *p = v; }
template <class T> void __stcs(T* p, T v) { *p = v; }
template <class T> void __stwt(T* p, T v) { *p = v; }

// ---------------------------------------------------------------- device math
// min/max: CUDA declares non-template overloads for every pair of arithmetic
// types (the result is the usual arithmetic conversion); non-templates also
// win over std::min/std::max under `using namespace std`.
#define SIM_MINMAX(A, B)                                                             \
  inline std::common_type_t<A, B> min(A a, B b) {                                    \
    using R = std::common_type_t<A, B>;                                              \
    if constexpr (std::is_floating_point_v<R>) return std::fmin((R)a, (R)b);         \
    else return (R)a < (R)b ? (R)a : (R)b;                                           \
  }                                                                                  \
  inline std::common_type_t<A, B> max(A a, B b) {                                    \
    using R = std::common_type_t<A, B>;                                              \
    if constexpr (std::is_floating_point_v<R>) return std::fmax((R)a, (R)b);         \
    else return (R)a < (R)b ? (R)b : (R)a;                                           \
  }
#define SIM_MINMAX_ROW(A) \
  SIM_MINMAX(A, int) SIM_MINMAX(A, unsigned int) SIM_MINMAX(A, long) SIM_MINMAX(A, unsigned long) \
  SIM_MINMAX(A, long long) SIM_MINMAX(A, unsigned long long) SIM_MINMAX(A, float) SIM_MINMAX(A, double)
SIM_MINMAX_ROW(int) SIM_MINMAX_ROW(unsigned int) SIM_MINMAX_ROW(long) SIM_MINMAX_ROW(unsigned long)
SIM_MINMAX_ROW(long long) SIM_MINMAX_ROW(unsigned long long) SIM_MINMAX_ROW(float) SIM_MINMAX_ROW(double)
#undef SIM_MINMAX_ROW
#undef SIM_MINMAX
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) { return a < b ? b : a; }

inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / std::cbrt(x); }
inline double rcbrt(double x) { return 1.0 / std::cbrt(x); }
#if !(defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 41)))
// glibc 2.41 declares the C23 sinpi/cospi itself.
inline double sinpi(double x) { return std::sin(M_PI * x); }
inline double cospi(double x) { return std::cos(M_PI * x); }
inline float sinpif(float x) { return (float)std::sin(M_PI * (double)x); }
inline float cospif(float x) { return (float)std::cos(M_PI * (double)x); }
#endif
inline void sincospi(double x, double* s, double* c) { *s = sinpi(x); *c = cospi(x); }
inline void sincospif(float x, float* s, float* c) { *s = sinpif(x); *c = cospif(x); }
inline double norm3d(double a, double b, double c) { return std::sqrt(a * a + b * b + c * c); }
inline float norm3df(float a, float b, float c) { return std::sqrt(a * a + b * b + c * c); }
inline double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
inline double norm4d(double a, double b, double c, double d) { return std::sqrt(a * a + b * b + c * c + d * d); }
inline float norm4df(float a, float b, float c, float d) { return std::sqrt(a * a + b * b + c * c + d * d); }
inline double rhypot(double a, double b) { return 1.0 / std::hypot(a, b); }
inline float rhypotf(float a, float b) { return 1.0f / std::hypot(a, b); }
inline double normcdf(double x) { return 0.5 * std::erfc(-x / M_SQRT2); }
inline float normcdff(float x) { return 0.5f * std::erfc(-x / (float)M_SQRT2); }
inline float fdividef(float a, float b) { return a / b; }
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return std::exp(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return std::log(x); }
inline float __log2f(float x) { return std::log2(x); }
inline float __log10f(float x) { return std::log10(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __tanf(float x) { return std::tan(x); }
inline float __powf(float a, float b) { return std::pow(a, b); }
inline void __sincosf(float x, float* s, float* c) { *s = std::sin(x); *c = std::cos(x); }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
// Directed rounding is not simulated: all _r? variants round to nearest.
#define SIM_ROUNDINGS(F) F(rn) F(rz) F(ru) F(rd)
#define SIM_FARITH(R)                                                        \
  inline float __fadd_##R(float a, float b) { return a + b; }                \
  inline float __fsub_##R(float a, float b) { return a - b; }                \
  inline float __fmul_##R(float a, float b) { return a * b; }                \
  inline float __fdiv_##R(float a, float b) { return a / b; }                \
  inline float __frcp_##R(float a) { return 1.0f / a; }                      \
  inline float __fsqrt_##R(float a) { return std::sqrt(a); }                 \
  inline float __fmaf_##R(float a, float b, float c) { return std::fma(a, b, c); } \
  inline double __dadd_##R(double a, double b) { return a + b; }             \
  inline double __dsub_##R(double a, double b) { return a - b; }             \
  inline double __dmul_##R(double a, double b) { return a * b; }             \
  inline double __ddiv_##R(double a, double b) { return a / b; }             \
  inline double __drcp_##R(double a) { return 1.0 / a; }                     \
  inline double __dsqrt_##R(double a) { return std::sqrt(a); }               \
  inline double __fma_##R(double a, double b, double c) { return std::fma(a, b, c); }
SIM_ROUNDINGS(SIM_FARITH)
#undef SIM_FARITH
#undef SIM_ROUNDINGS
inline float __frsqrt_rn(float a) { return 1.0f / std::sqrt(a); }

inline int __float2int_rn(float x) { return (int)std::nearbyint(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline int __float2int_ru(float x) { return (int)std::ceil(x); }
inline int __float2int_rd(float x) { return (int)std::floor(x); }
inline unsigned __float2uint_rn(float x) { return (unsigned)std::nearbyint(x); }
inline unsigned __float2uint_rz(float x) { return (unsigned)x; }
inline long long __float2ll_rn(float x) { return (long long)std::nearbyint(x); }
inline long long __float2ll_rz(float x) { return (long long)x; }
inline int __double2int_rn(double x) { return (int)std::nearbyint(x); }
inline int __double2int_rz(double x) { return (int)x; }
inline long long __double2ll_rn(double x) { return (long long)std::nearbyint(x); }
inline float __double2float_rn(double x) { return (float)x; }
inline float __int2float_rn(int x) { return (float)x; }
inline float __uint2float_rn(unsigned x) { return (float)x; }
inline float __ll2float_rn(long long x) { return (float)x; }
inline double __ll2double_rn(long long x) { return (double)x; }
inline double __int2double_rn(int x) { return (double)x; }
template <class To, class From> To __sim_bitcast(From v) { To t; std::memcpy(&t, &v, sizeof t); return t; }
inline int __float_as_int(float x) { return __sim_bitcast<int>(x); }
inline unsigned __float_as_uint(float x) { return __sim_bitcast<unsigned>(x); }
inline float __int_as_float(int x) { return __sim_bitcast<float>(x); }
inline float __uint_as_float(unsigned x) { return __sim_bitcast<float>(x); }
inline long long __double_as_longlong(double x) { return __sim_bitcast<long long>(x); }
inline double __longlong_as_double(long long x) { return __sim_bitcast<double>(x); }
inline int __double2hiint(double x) { return (int)(__double_as_longlong(x) >> 32); }
inline int __double2loint(double x) { return (int)(unsigned)__double_as_longlong(x); }
inline double __hiloint2double(int hi, int lo) {
  return __longlong_as_double((long long)(((unsigned long long)(unsigned)hi << 32) | (unsigned)lo));
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long x) {
  return ((unsigned long long)__brev((unsigned)x) << 32) | __brev((unsigned)(x >> 32));
}
inline int __mul24(int a, int b) { return ((a << 8) >> 8) * ((b << 8) >> 8); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xFFFFFFu) * (b & 0xFFFFFFu); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return (long long)(((__int128)a * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
inline unsigned __sad(int x, int y, unsigned z) { return (unsigned)(x > y ? x - y : y - x) + z; }
inline unsigned __usad(unsigned x, unsigned y, unsigned z) { return (x > y ? x - y : y - x) + z; }
inline int __hadd(int a, int b) { return (int)(((long long)a + b) >> 1); }
inline int __rhadd(int a, int b) { return (int)(((long long)a + b + 1) >> 1); }
inline unsigned __uhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b) >> 1); }
inline unsigned __urhadd(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a + b + 1) >> 1); }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned)((v >> (((s >> (4 * i)) & 7) * 8)) & 0xFF) << (8 * i);
  return r;
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)(((((unsigned long long)hi << 32) | lo) << (s & 31)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)(((((unsigned long long)hi << 32) | lo) << (s > 32 ? 32 : s)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)((((unsigned long long)hi << 32) | lo) >> (s & 31));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
  return (unsigned)((((unsigned long long)hi << 32) | lo) >> (s > 32 ? 32 : s));
}

// ---------------------------------------------------------------- async copies (see Pending)
namespace __sim {
inline bool pinned_host(const void* p) {
  const Alloc* a = find_alloc(p);
  return a && (a->kind == kPinned || a->kind == kRegistered);
}
inline void land(const Pending& q) {
  if (q.to_host) {
    std::memcpy(q.host, q.data.data(), q.n);
  } else if (std::memcmp(q.host, q.data.data(), q.n) != 0) {
    diagnose(format("cudaMemcpyAsync: the page-locked source %p (%zu bytes) of a host-to-device copy was modified "
                    "before a synchronisation ordered that copy before the host: on a GPU it may copy the new bytes",
                    (void*)q.host, q.n));
  }
}
// Completes, in issue order, the pending copies that `done` selects.
template <class F>
void settle(F done) {
  std::vector<Pending> keep;
  for (auto& q : g_pending) {
    if (done(q)) land(q);
    else keep.push_back(std::move(q));
  }
  g_pending.swap(keep);
}
inline void settle_range(const void* p, size_t n) {
  uintptr_t a = (uintptr_t)p, b = a + n;
  settle([&](const Pending& q) { return (uintptr_t)q.host < b && a < (uintptr_t)q.host + q.n; });
}
inline bool pending_in(const void* p, size_t n) {
  uintptr_t a = (uintptr_t)p, b = a + n;
  for (const auto& q : g_pending)
    if ((uintptr_t)q.host < b && a < (uintptr_t)q.host + q.n) return true;
  return false;
}
// Completes the pending copies the host is now ordered after (its clock covers them: through the
// stream it synchronised, or an event another stream waited for after them).
inline void settle_seen() {
  settle([](const Pending& q) {
    auto it = g_host_clock.find(stream_key(q.stream));
    return it != g_host_clock.end() && it->second >= q.tick;
  });
}

}  // namespace __sim

// ---------------------------------------------------------------- runtime API
#define SIM_API_ENTER                                    \
  std::lock_guard<std::recursive_mutex> sim_lock_(__sim::g_mu); \
  if (__sim::g_sticky) return __sim::g_last = __sim::g_sticky

SIM_RT const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
#define SIM_E(N) case N: return #N;
    SIM_E(cudaSuccess) SIM_E(cudaErrorInvalidValue) SIM_E(cudaErrorMemoryAllocation)
    SIM_E(cudaErrorInitializationError) SIM_E(cudaErrorInvalidConfiguration) SIM_E(cudaErrorInvalidPitchValue)
    SIM_E(cudaErrorInvalidSymbol) SIM_E(cudaErrorInvalidDevicePointer) SIM_E(cudaErrorInvalidMemcpyDirection)
    SIM_E(cudaErrorInvalidDeviceFunction) SIM_E(cudaErrorNoDevice) SIM_E(cudaErrorInvalidDevice)
    SIM_E(cudaErrorInvalidResourceHandle) SIM_E(cudaErrorNotReady) SIM_E(cudaErrorIllegalAddress)
    SIM_E(cudaErrorLaunchOutOfResources) SIM_E(cudaErrorLaunchTimeout) SIM_E(cudaErrorAssert)
    SIM_E(cudaErrorHostMemoryAlreadyRegistered) SIM_E(cudaErrorHostMemoryNotRegistered)
    SIM_E(cudaErrorIllegalInstruction) SIM_E(cudaErrorMisalignedAddress) SIM_E(cudaErrorLaunchFailure)
    SIM_E(cudaErrorNotPermitted) SIM_E(cudaErrorNotSupported) SIM_E(cudaErrorUnknown)
#undef SIM_E
  }
  return "cudaErrorUnknown";
}
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorAssert: return "device-side assert triggered";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    default: return cudaGetErrorName(e);
  }
}
inline cudaError_t cudaGetLastError() {
  std::lock_guard<std::recursive_mutex> lock(__sim::g_mu);
  cudaError_t e = __sim::g_sticky ? __sim::g_sticky : __sim::g_last;
  __sim::g_last = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return __sim::g_sticky ? __sim::g_sticky : __sim::g_last; }
inline cudaError_t __sim_impl_cudaDeviceSynchronize() {
  std::lock_guard<std::recursive_mutex> lock(__sim::g_mu);
  __sim::host_waits_all();
  return __sim::g_sticky;
}
inline cudaError_t __sim_impl_cudaThreadSynchronize() { return __sim_impl_cudaDeviceSynchronize(); }
inline cudaError_t cudaDeviceReset() {
  std::lock_guard<std::recursive_mutex> lock(__sim::g_mu);
  for (auto& kv : __sim::g_allocs)
    if (kv.second.kind != __sim::kRegistered && kv.second.kind != __sim::kSymbol)
      __sim::free_block(kv.second.base, kv.second.total);
  __sim::g_allocs.clear();
  __sim::g_sticky = __sim::g_last = cudaSuccess;
  return cudaSuccess;
}

inline cudaError_t cudaMalloc(void** p, size_t n) { SIM_API_ENTER; return __sim::allocate(p, n, __sim::kDevice, "cudaMalloc"); }
template <class T> cudaError_t cudaMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
inline cudaError_t cudaMallocManaged(void** p, size_t n, unsigned = cudaMemAttachGlobal) {
  SIM_API_ENTER;
  return __sim::allocate(p, n, __sim::kManaged, "cudaMallocManaged");
}
template <class T> cudaError_t cudaMallocManaged(T** p, size_t n, unsigned f = cudaMemAttachGlobal) {
  return cudaMallocManaged(reinterpret_cast<void**>(p), n, f);
}
inline cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  SIM_API_ENTER;
  if (!__sim::valid_stream(s)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaMallocAsync: invalid stream");
  cudaError_t e = __sim::allocate(p, n, __sim::kDevice, "cudaMallocAsync");
  if (e == cudaSuccess && *p) __sim::use(*p, true, s, __sim::order_op(s), "cudaMallocAsync");
  return e;
}
template <class T> cudaError_t cudaMallocAsync(T** p, size_t n, cudaStream_t s) {
  return cudaMallocAsync(reinterpret_cast<void**>(p), n, s);
}
inline cudaError_t __sim_impl_cudaFree(void* p) {
  SIM_API_ENTER;
  __sim::g_pool_allocs.erase((uintptr_t)p);
  __sim::forget_uses(p);
  return __sim::release(p, __sim::kDevice, "cudaFree");
}
SIM_RT cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  SIM_API_ENTER;
  if (!__sim::valid_stream(s)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaFreeAsync: invalid stream");
  if (p) __sim::use(p, true, s, __sim::order_op(s), "cudaFreeAsync");
  return __sim_impl_cudaFree(p);
}
inline cudaError_t cudaMallocHost(void** p, size_t n) { SIM_API_ENTER; return __sim::allocate(p, n, __sim::kPinned, "cudaMallocHost"); }
template <class T> cudaError_t cudaMallocHost(T** p, size_t n) { return cudaMallocHost(reinterpret_cast<void**>(p), n); }
inline cudaError_t cudaHostAlloc(void** p, size_t n, unsigned) { SIM_API_ENTER; return __sim::allocate(p, n, __sim::kPinned, "cudaHostAlloc"); }
template <class T> cudaError_t cudaHostAlloc(T** p, size_t n, unsigned f) { return cudaHostAlloc(reinterpret_cast<void**>(p), n, f); }
inline cudaError_t cudaFreeHost(void* p) {
  SIM_API_ENTER;
  auto it = __sim::g_allocs.find((uintptr_t)p);
  if (it != __sim::g_allocs.end() && it->second.kind == __sim::kPinned)
    __sim::settle_range(p, it->second.size);  // cudaFreeHost waits for the copies that use the buffer
  return __sim::release(p, __sim::kPinned, "cudaFreeHost");
}
SIM_RT cudaError_t cudaHostRegister(void* p, size_t n, unsigned) {
  SIM_API_ENTER;
  if (!p || n == 0) return __sim::api_error(cudaErrorInvalidValue, "cudaHostRegister: null pointer or zero size");
  // A range overlapping any allocation or registration is refused, as CUDA refuses page-locked
  // overlaps.  The refusal is returned, not diagnosed: a caller may handle it (fall back to a copy).
  uintptr_t a = (uintptr_t)p, b = a + n;
  auto it = __sim::g_allocs.lower_bound(b);
  if (it != __sim::g_allocs.begin()) {
    --it;
    if (it->first < b && a < it->first + std::max<size_t>(it->second.size, 1))
      return __sim::g_last = cudaErrorHostMemoryAlreadyRegistered;
  }
  __sim::g_allocs[(uintptr_t)p] = __sim::Alloc{n, 0, n, static_cast<unsigned char*>(p), __sim::kRegistered, ++__sim::g_alloc_ids, false};
  return cudaSuccess;
}
SIM_RT cudaError_t cudaHostUnregister(void* p) {
  SIM_API_ENTER;
  auto it = __sim::g_allocs.find((uintptr_t)p);
  if (it == __sim::g_allocs.end() || it->second.kind != __sim::kRegistered)
    return __sim::api_error(cudaErrorHostMemoryNotRegistered, "cudaHostUnregister: pointer not registered");
  cudaError_t err = cudaSuccess;
  if (__sim::pending_in(p, it->second.size)) {
    __sim::settle_range(p, it->second.size);
    err = __sim::api_error(cudaErrorInvalidValue,
                           __sim::format("cudaHostUnregister(%p): an asynchronous copy of this memory may still be "
                                         "running (synchronise its stream first)", p));
  }
  __sim::g_allocs.erase(it);
  return err;
}
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* p) {
  SIM_API_ENTER;
  if (!attr) return __sim::api_error(cudaErrorInvalidValue, "cudaPointerGetAttributes: null attributes");
  const __sim::Alloc* a = __sim::find_alloc(p);
  *attr = cudaPointerAttributes{cudaMemoryTypeUnregistered, -2, nullptr, nullptr};
  if (!a || a->kind == __sim::kSymbol) return cudaSuccess;
  attr->device = 0;
  attr->type = a->kind == __sim::kDevice ? cudaMemoryTypeDevice
               : a->kind == __sim::kManaged ? cudaMemoryTypeManaged : cudaMemoryTypeHost;
  attr->devicePointer = const_cast<void*>(p);
  attr->hostPointer = a->kind == __sim::kDevice ? nullptr : const_cast<void*>(p);
  return cudaSuccess;
}
SIM_RT cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  SIM_API_ENTER;
  if (!pool || !props) return __sim::api_error(cudaErrorInvalidValue, "cudaMemPoolCreate: null argument");
  if (props->allocType != cudaMemAllocationTypePinned || props->location.type != cudaMemLocationTypeDevice ||
      props->location.id != 0)
    return __sim::api_error(cudaErrorInvalidValue,
                            "cudaMemPoolCreate: only pinned pools on device 0 (allocType, location) exist");
  *pool = new CUmemPoolHandle_st{(int)__sim::g_pools.size() + 1, 0};
  __sim::g_pools.insert(*pool);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int device) {
  SIM_API_ENTER;
  static CUmemPoolHandle_st default_pool{0, 0};
  if (device != 0) return __sim::api_error(cudaErrorInvalidDevice, "cudaDeviceGetDefaultMemPool: only device 0");
  __sim::g_pools.insert(&default_pool);
  *pool = &default_pool;
  return cudaSuccess;
}
SIM_RT cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  SIM_API_ENTER;
  if (!__sim::g_pools.count(pool) || pool->id == 0)
    return __sim::api_error(cudaErrorInvalidValue, "cudaMemPoolDestroy: not a pool created by cudaMemPoolCreate");
  // Like CUDA: memory still allocated from it stays valid until freed.
  __sim::g_pools.erase(pool);
  for (auto& kv : __sim::g_pool_allocs)
    if (kv.second == pool) kv.second = nullptr;
  delete pool;
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  SIM_API_ENTER;
  if (!__sim::g_pools.count(pool) || !value)
    return __sim::api_error(cudaErrorInvalidValue, "cudaMemPoolSetAttribute: invalid pool or null value");
  if (attr == cudaMemPoolAttrReleaseThreshold) pool->release_threshold = *static_cast<unsigned long long*>(value);
  else if (attr < cudaMemPoolReuseFollowEventDependencies || attr > cudaMemPoolAttrUsedMemHigh)
    return __sim::api_error(cudaErrorInvalidValue, "cudaMemPoolSetAttribute: unknown attribute");
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, cudaMemPoolAttr attr, void* value) {
  SIM_API_ENTER;
  if (!__sim::g_pools.count(pool) || !value)
    return __sim::api_error(cudaErrorInvalidValue, "cudaMemPoolGetAttribute: invalid pool or null value");
  if (attr == cudaMemPoolAttrReleaseThreshold) *static_cast<unsigned long long*>(value) = pool->release_threshold;
  else if (attr >= cudaMemPoolAttrReservedMemCurrent && attr <= cudaMemPoolAttrUsedMemHigh) {
    unsigned long long used = 0;
    for (auto& kv : __sim::g_pool_allocs)
      if (kv.second == pool) used += __sim::g_allocs.count(kv.first) ? __sim::g_allocs[kv.first].size : 0;
    *static_cast<unsigned long long*>(value) = used;
  } else *static_cast<int*>(value) = 1;
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t) {
  SIM_API_ENTER;
  if (!__sim::g_pools.count(pool)) return __sim::api_error(cudaErrorInvalidValue, "cudaMemPoolTrimTo: invalid pool");
  return cudaSuccess;
}
// Fresh (poisoned, guarded) device memory every time: reuse is the GPU's business, and
// fresh memory keeps a read of bytes nobody copied in visible.
SIM_RT cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s) {
  SIM_API_ENTER;
  if (!__sim::g_pools.count(pool))
    return __sim::api_error(cudaErrorInvalidValue, "cudaMallocFromPoolAsync: invalid pool");
  if (!__sim::valid_stream(s))
    return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaMallocFromPoolAsync: invalid stream");
  cudaError_t e = __sim::allocate(p, n, __sim::kDevice, "cudaMallocFromPoolAsync");
  if (e == cudaSuccess && *p) {
    __sim::g_pool_allocs[(uintptr_t)*p] = pool;
    ++__sim::g_pool_alloc_count;
    __sim::use(*p, true, s, __sim::order_op(s), "cudaMallocFromPoolAsync");
  }
  return e;
}
template <class T> cudaError_t cudaMallocFromPoolAsync(T** p, size_t n, cudaMemPool_t pool, cudaStream_t s) {
  return cudaMallocFromPoolAsync(reinterpret_cast<void**>(p), n, pool, s);
}
inline cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned) {
  SIM_API_ENTER;
  const __sim::Alloc* a = __sim::find_alloc(h);
  if (!a || (a->kind != __sim::kPinned && a->kind != __sim::kRegistered))
    return __sim::api_error(cudaErrorInvalidValue, "cudaHostGetDevicePointer: not page-locked host memory");
  *d = h;
  return cudaSuccess;
}
template <class T> cudaError_t cudaHostGetDevicePointer(T** d, void* h, unsigned f) {
  return cudaHostGetDevicePointer(reinterpret_cast<void**>(d), h, f);
}
inline cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  *pitch = (width + 511) / 512 * 512;
  return cudaMalloc(p, *pitch * height);
}
template <class T> cudaError_t cudaMallocPitch(T** p, size_t* pitch, size_t w, size_t h) {
  return cudaMallocPitch(reinterpret_cast<void**>(p), pitch, w, h);
}

inline cudaError_t __sim_check_copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, const char* api) {
  using namespace __sim;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      if (cudaError_t e = require_device(dst, n, api, "destination")) return e;
      if (cudaError_t e = require_host(src, n, api, "source")) return e;
      g_h2d_bytes += n;
      return cudaSuccess;
    case cudaMemcpyDeviceToHost:
      if (cudaError_t e = require_device(src, n, api, "source")) return e;
      return require_host(dst, n, api, "destination");
    case cudaMemcpyDeviceToDevice:
      if (cudaError_t e = require_device(src, n, api, "source")) return e;
      return require_device(dst, n, api, "destination");
    case cudaMemcpyHostToHost:
      if (cudaError_t e = require_host(src, n, api, "source")) return e;
      return require_host(dst, n, api, "destination");
    case cudaMemcpyDefault: return cudaSuccess;
  }
  return api_error(cudaErrorInvalidMemcpyDirection, format("%s: invalid cudaMemcpyKind %d", api, (int)kind));
}
// The device sides of a copy on `s`, for the stream-order check.
inline unsigned long long __sim_use_copy(void* dst, const void* src, cudaMemcpyKind kind, cudaStream_t s,
                                         const char* api) {
  const unsigned long long tick = __sim::order_op(s);
  if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault)
    __sim::use(src, false, s, tick, __sim::format("%s from %p", api, src));
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice || kind == cudaMemcpyDefault)
    __sim::use(dst, true, s, tick, __sim::format("%s to %p", api, dst));
  return tick;
}
inline cudaError_t __sim_impl_cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  SIM_API_ENTER;
  // A blocking copy runs on the legacy default stream: what that stream waits for is done first.
  __sim::settle([](const __sim::Pending& q) { return __sim::blocking_stream(q.stream); });
  if (n == 0) return cudaSuccess;
  if (cudaError_t e = __sim_check_copy(dst, src, n, kind, "cudaMemcpy")) return e;
  __sim_use_copy(dst, src, kind, nullptr, "cudaMemcpy");
  __sim::host_waits(nullptr);
  std::memmove(dst, src, n);
  return cudaSuccess;
}
// Between the device and page-locked host memory the copy is asynchronous (see __sim::Pending);
// from or to pageable memory it completes before the call returns, as in CUDA.
SIM_RT cudaError_t __sim_impl_cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s = nullptr) {
  SIM_API_ENTER;
  if (!__sim::valid_stream(s)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaMemcpyAsync: invalid stream");
  if (n == 0) return cudaSuccess;
  if (cudaError_t e = __sim_check_copy(dst, src, n, kind, "cudaMemcpyAsync")) return e;
  const unsigned long long tick = __sim_use_copy(dst, src, kind, s, "cudaMemcpyAsync");
  unsigned char* host = kind == cudaMemcpyHostToDevice ? (unsigned char*)src
                        : kind == cudaMemcpyDeviceToHost ? (unsigned char*)dst : nullptr;
  if (host) {
    // A host range partly in page-locked memory, or across two page-locked allocations or
    // registrations, is refused by CUDA ("invalid argument", seen on an H200): one copy per piece.
    uintptr_t a = (uintptr_t)host, b = a + n;
    for (auto it = __sim::g_allocs.lower_bound(b); it != __sim::g_allocs.begin();) {
      --it;
      const __sim::Alloc& al = it->second;
      uintptr_t lo = it->first, hi = lo + al.size;
      if (hi <= a) break;  // allocations do not overlap: every earlier one ends before this one
      if (al.kind != __sim::kPinned && al.kind != __sim::kRegistered) continue;
      if (!(lo <= a && b <= hi))
        return __sim::api_error(cudaErrorInvalidValue,
                                __sim::format("cudaMemcpyAsync: host range [%p, %p) is not inside one page-locked "
                                              "allocation or registration", (void*)a, (void*)b));
    }
  }
  if (!host || !__sim::pinned_host(host)) {
    if (kind == cudaMemcpyDeviceToHost) {  // it returns when the bytes are there
      __sim::host_waits(s);
    }
    std::memmove(dst, src, n);
    return cudaSuccess;
  }
  // Earlier copies touching the same host bytes that this one follows (on this stream, or ordered
  // before it by events) come first.
  uintptr_t a = (uintptr_t)host, b = a + n;
  const void* key = __sim::stream_key(s);
  const __sim::Clock& clock = __sim::g_clock[key];
  __sim::settle([&](const __sim::Pending& q) {
    return (uintptr_t)q.host < b && a < (uintptr_t)q.host + q.n &&
           (q.stream == s || __sim::ordered_before(__sim::Access{__sim::stream_key(q.stream), q.tick, ""}, key, clock));
  });
  const unsigned char* from = static_cast<const unsigned char*>(src);
  __sim::g_pending.push_back(__sim::Pending{s, tick, kind == cudaMemcpyDeviceToHost, host, n,
                                            std::vector<unsigned char>(from, from + n)});
  if (kind == cudaMemcpyDeviceToHost) {
    __sim::poison(dst, n);  // not landed yet
  } else {
    std::memmove(dst, src, n);
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                                size_t height, cudaMemcpyKind kind) {
  SIM_API_ENTER;
  if (width > dpitch || width > spitch) return __sim::api_error(cudaErrorInvalidPitchValue, "cudaMemcpy2D: width exceeds pitch");
  for (size_t r = 0; r < height; ++r) {
    char* d = static_cast<char*>(dst) + r * dpitch;
    const char* s = static_cast<const char*>(src) + r * spitch;
    if (cudaError_t e = __sim_check_copy(d, s, width, kind, "cudaMemcpy2D")) return e;
    std::memmove(d, s, width);
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* dst, size_t dp, const void* src, size_t sp, size_t w, size_t h,
                                     cudaMemcpyKind k, cudaStream_t = nullptr) {
  return cudaMemcpy2D(dst, dp, src, sp, w, h, k);
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) {
  SIM_API_ENTER;
  if (n == 0) return cudaSuccess;
  if (cudaError_t e = __sim::require_device(p, n, "cudaMemset", "destination")) return e;
  __sim::use(p, true, nullptr, __sim::order_op(nullptr), "cudaMemset");
  std::memset(p, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s = nullptr) {
  SIM_API_ENTER;
  if (!__sim::valid_stream(s)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaMemsetAsync: invalid stream");
  if (n == 0) return cudaSuccess;
  if (cudaError_t e = __sim::require_device(p, n, "cudaMemsetAsync", "destination")) return e;
  __sim::use(p, true, s, __sim::order_op(s), "cudaMemsetAsync");
  std::memset(p, v, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemset2D(void* p, size_t pitch, int v, size_t w, size_t h) {
  for (size_t r = 0; r < h; ++r)
    if (cudaError_t e = cudaMemset(static_cast<char*>(p) + r * pitch, v, w)) return e;
  return cudaSuccess;
}
inline cudaError_t cudaMemPrefetchAsync(const void*, size_t, int, cudaStream_t = nullptr) { return __sim::g_sticky; }
inline cudaError_t cudaMemAdvise(const void*, size_t, cudaMemoryAdvise, int) { return __sim::g_sticky; }
inline cudaError_t cudaMemGetInfo(size_t* free_b, size_t* total) {
  *free_b = (size_t)80 << 30;
  *total = (size_t)80 << 30;
  return __sim::g_sticky;
}

template <class T>
cudaError_t cudaMemcpyToSymbol(const T& sym, const void* src, size_t n, size_t off = 0,
                               cudaMemcpyKind = cudaMemcpyHostToDevice) {
  SIM_API_ENTER;
  if (off + n > sizeof(T)) return __sim::api_error(cudaErrorInvalidValue, "cudaMemcpyToSymbol: range exceeds the symbol");
  std::memmove(reinterpret_cast<char*>(const_cast<T*>(&sym)) + off, src, n);
  return cudaSuccess;
}
template <class T>
cudaError_t cudaMemcpyFromSymbol(void* dst, const T& sym, size_t n, size_t off = 0,
                                 cudaMemcpyKind = cudaMemcpyDeviceToHost) {
  SIM_API_ENTER;
  if (off + n > sizeof(T)) return __sim::api_error(cudaErrorInvalidValue, "cudaMemcpyFromSymbol: range exceeds the symbol");
  std::memmove(dst, reinterpret_cast<const char*>(&sym) + off, n);
  return cudaSuccess;
}
template <class T>
cudaError_t cudaMemcpyToSymbolAsync(const T& sym, const void* src, size_t n, size_t off = 0,
                                    cudaMemcpyKind k = cudaMemcpyHostToDevice, cudaStream_t = nullptr) {
  return cudaMemcpyToSymbol(sym, src, n, off, k);
}
template <class T>
cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const T& sym, size_t n, size_t off = 0,
                                      cudaMemcpyKind k = cudaMemcpyDeviceToHost, cudaStream_t = nullptr) {
  return cudaMemcpyFromSymbol(dst, sym, n, off, k);
}
template <class T>
cudaError_t cudaGetSymbolAddress(void** p, const T& sym) {
  SIM_API_ENTER;
  *p = const_cast<T*>(&sym);
  if (!__sim::find_alloc(*p))
    __sim::g_allocs[(uintptr_t)*p] = __sim::Alloc{sizeof(T), 0, sizeof(T), static_cast<unsigned char*>(*p), __sim::kSymbol,
                                                 ++__sim::g_alloc_ids, false};
  return cudaSuccess;
}
template <class T>
cudaError_t cudaGetSymbolSize(size_t* n, const T&) { *n = sizeof(T); return __sim::g_sticky; }

inline cudaError_t __sim_impl_cudaStreamCreate(cudaStream_t* s) {
  SIM_API_ENTER;
  *s = new CUstream_st{(int)__sim::g_streams.size() + 1, 0};
  __sim::g_streams.insert(*s);
  return cudaSuccess;
}
inline cudaError_t __sim_impl_cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  cudaError_t e = __sim_impl_cudaStreamCreate(s);
  if (e == cudaSuccess) (*s)->flags = flags;
  return e;
}
inline cudaError_t __sim_impl_cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int) {
  return __sim_impl_cudaStreamCreateWithFlags(s, flags);
}
inline cudaError_t __sim_impl_cudaStreamDestroy(cudaStream_t s) {
  SIM_API_ENTER;
  if (!__sim::g_streams.erase(s)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaStreamDestroy: invalid stream");
  __sim::settle([&](const __sim::Pending& q) { return q.stream == s; });  // its work still completes
  delete s;
  return cudaSuccess;
}
inline cudaError_t __sim_impl_cudaStreamSynchronize(cudaStream_t s) {
  SIM_API_ENTER;
  if (!__sim::valid_stream(s)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize: invalid stream");
  __sim::host_waits(s);
  return cudaSuccess;
}
inline cudaError_t __sim_impl_cudaStreamQuery(cudaStream_t s) { return __sim_impl_cudaStreamSynchronize(s); }
// Later work on `s` follows the work `e` recorded (no host synchronisation).
inline cudaError_t __sim_impl_cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned = 0) {
  SIM_API_ENTER;
  if (!__sim::valid_stream(s)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: invalid stream");
  if (!__sim::g_events.count(e)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: invalid event");
  if (e->recorded) __sim::join(__sim::g_clock[__sim::stream_key(s)], e->clock);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  if (least) *least = 0;
  if (greatest) *greatest = -5;
  return __sim::g_sticky;
}

inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  SIM_API_ENTER;
  *e = new CUevent_st{{}, false, {}, false};
  __sim::g_events.insert(*e);
  return cudaSuccess;
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
inline cudaError_t __sim_impl_cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr) {
  SIM_API_ENTER;
  if (!__sim::g_events.count(e)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaEventRecord: invalid event");
  if (!__sim::valid_stream(s)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaEventRecord: invalid stream");
  e->when = std::chrono::steady_clock::now();
  e->recorded = true;
  e->queried = false;
  __sim::order_op(s);
  e->clock = __sim::g_clock[__sim::stream_key(s)];
  return cudaSuccess;
}
inline cudaError_t __sim_impl_cudaEventSynchronize(cudaEvent_t e) {
  SIM_API_ENTER;
  if (!__sim::g_events.count(e)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: invalid event");
  if (e->recorded) __sim::host_sees(e->clock);  // what its stream had issued (or waited for) is done
  return cudaSuccess;
}
// The first query after a record answers "not ready", as a GPU may: code that polls must not take
// the work as done until it has seen it done (the stream-order check then sees what it relies on).
inline cudaError_t __sim_impl_cudaEventQuery(cudaEvent_t e) {
  {
    SIM_API_ENTER;
    if (!__sim::g_events.count(e)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaEventQuery: invalid event");
    if (e->recorded && !e->queried) {
      e->queried = true;
      return cudaErrorNotReady;
    }
  }
  return __sim_impl_cudaEventSynchronize(e);
}
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  SIM_API_ENTER;
  if (!__sim::g_events.count(a) || !__sim::g_events.count(b) || !a->recorded || !b->recorded)
    return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: event not recorded");
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return cudaSuccess;
}
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  SIM_API_ENTER;
  if (!__sim::g_events.erase(e)) return __sim::api_error(cudaErrorInvalidResourceHandle, "cudaEventDestroy: invalid event");
  delete e;
  return cudaSuccess;
}

inline cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return __sim::g_sticky; }
inline cudaError_t cudaSetDevice(int d) {
  if (d != 0) return __sim::api_error(cudaErrorInvalidDevice, __sim::format("cudaSetDevice(%d): only device 0 exists", d));
  return __sim::g_sticky;
}
inline cudaError_t cudaSetDeviceFlags(unsigned) { return __sim::g_sticky; }
inline cudaError_t cudaDriverGetVersion(int* v) { *v = CUDART_VERSION; return cudaSuccess; }
inline cudaError_t cudaRuntimeGetVersion(int* v) { *v = CUDART_VERSION; return cudaSuccess; }
inline cudaError_t cudaDeviceSetLimit(cudaLimit, size_t) { return __sim::g_sticky; }
inline cudaError_t cudaDeviceGetLimit(size_t* v, cudaLimit l) {
  *v = l == cudaLimitStackSize ? 1024 : ((size_t)8 << 20);
  return __sim::g_sticky;
}
inline cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return __sim::g_sticky; }
inline cudaError_t cudaDeviceSetSharedMemConfig(cudaSharedMemConfig) { return __sim::g_sticky; }
inline cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int dev) {
  if (dev != 0) return __sim::api_error(cudaErrorInvalidDevice, "cudaDeviceGetAttribute: only device 0 exists");
  switch (a) {
    case cudaDevAttrMaxThreadsPerBlock: case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: *v = 1024; break;
    case cudaDevAttrMaxBlockDimZ: *v = 64; break;
    case cudaDevAttrMaxGridDimX: *v = 2147483647; break;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: *v = 65535; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = (int)__sim::kDefaultDynSmem; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)__sim::kMaxDynSmem; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = 233472; break;
    case cudaDevAttrTotalConstantMemory: *v = 65536; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrMaxRegistersPerBlock: *v = 65536; break;
    case cudaDevAttrClockRate: *v = 1980000; break;
    case cudaDevAttrMultiProcessorCount: *v = 132; break;
    case cudaDevAttrMemoryClockRate: *v = 2619000; break;
    case cudaDevAttrGlobalMemoryBusWidth: *v = 5120; break;
    case cudaDevAttrL2CacheSize: *v = 50331648; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = 2048; break;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; break;
    case cudaDevAttrConcurrentKernels: case cudaDevAttrUnifiedAddressing: case cudaDevAttrManagedMemory: *v = 1; break;
    default: return __sim::api_error(cudaErrorInvalidValue, __sim::format("cudaDeviceGetAttribute: attribute %d not simulated", (int)a));
  }
  return __sim::g_sticky;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int dev) {
  if (dev != 0) return __sim::api_error(cudaErrorInvalidDevice, "cudaGetDeviceProperties: only device 0 exists");
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->name, "transpile CUDA simulator (sm_90)");
  p->totalGlobalMem = (size_t)80 << 30;
  p->sharedMemPerBlock = __sim::kDefaultDynSmem;
  p->sharedMemPerBlockOptin = __sim::kMaxDynSmem;
  p->sharedMemPerMultiprocessor = 233472;
  p->regsPerBlock = p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->memPitch = (size_t)1 << 31;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
  p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647;
  p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->clockRate = 1980000;
  p->totalConstMem = 65536;
  p->major = 9;
  p->minor = 0;
  p->textureAlignment = 512;
  p->multiProcessorCount = 132;
  p->canMapHostMemory = p->concurrentKernels = p->unifiedAddressing = p->managedMemory = 1;
  p->memoryClockRate = 2619000;
  p->memoryBusWidth = 5120;
  p->l2CacheSize = 50331648;
  p->maxThreadsPerMultiProcessor = 2048;
  p->maxBlocksPerMultiProcessor = 32;
  return __sim::g_sticky;
}

inline cudaError_t cudaFuncSetAttribute(const void* f, cudaFuncAttribute attr, int value) {
  SIM_API_ENTER;
  if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
    if (value < 0 || (size_t)value > __sim::kMaxDynSmem)
      return __sim::api_error(cudaErrorInvalidValue,
                              __sim::format("cudaFuncSetAttribute: %d bytes of dynamic shared memory exceed the "
                                            "device maximum %zu", value, __sim::kMaxDynSmem));
    __sim::g_func_smem[f] = value;
  }
  return cudaSuccess;
}
template <class T> cudaError_t cudaFuncSetAttribute(T* f, cudaFuncAttribute a, int v) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(f), a, v);
}
inline cudaError_t cudaFuncSetCacheConfig(const void*, cudaFuncCache) { return __sim::g_sticky; }
template <class T> cudaError_t cudaFuncSetCacheConfig(T*, cudaFuncCache) { return __sim::g_sticky; }
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void* f) {
  std::memset(a, 0, sizeof *a);
  a->maxThreadsPerBlock = 1024;
  a->numRegs = 32;
  a->ptxVersion = a->binaryVersion = 90;
  auto it = __sim::g_func_smem.find(f);
  a->maxDynamicSharedSizeBytes = it == __sim::g_func_smem.end() ? (int)__sim::kDefaultDynSmem : it->second;
  return __sim::g_sticky;
}
template <class T> cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, T* f) {
  return cudaFuncGetAttributes(a, reinterpret_cast<const void*>(f));
}
template <class T>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, T, int block, size_t = 0) {
  *n = block > 0 ? std::max(1, 2048 / block) : 0;
  return __sim::g_sticky;
}
template <class T>
cudaError_t cudaOccupancyMaxPotentialBlockSize(int* min_grid, int* block, T, size_t = 0, int limit = 0) {
  *block = limit > 0 && limit < 1024 ? limit : 1024;
  *min_grid = 132 * (2048 / *block);
  return __sim::g_sticky;
}

// ---------------------------------------------------------------- audited runtime calls
// The calls the verifier's stream audit (transpile/verify/include/verify_audit.h) follows: each
// public function calls the audit's hook when one is installed, else the simulator's own
// (__sim_impl_*), which the simulator itself calls.  Hooks rather than macros: a candidate cannot
// tell by `#ifdef cudaMemcpy` that it runs audited (docs/verify.md).
namespace __sim {
struct AuditApi {
  decltype(&__sim_impl_cudaDeviceSynchronize) cudaDeviceSynchronize = nullptr;
  decltype(&__sim_impl_cudaThreadSynchronize) cudaThreadSynchronize = nullptr;
  decltype(&__sim_impl_cudaFree) cudaFree = nullptr;
  decltype(&__sim_impl_cudaMemcpy) cudaMemcpy = nullptr;
  decltype(&__sim_impl_cudaMemcpyAsync) cudaMemcpyAsync = nullptr;
  decltype(&__sim_impl_cudaStreamCreate) cudaStreamCreate = nullptr;
  decltype(&__sim_impl_cudaStreamCreateWithFlags) cudaStreamCreateWithFlags = nullptr;
  decltype(&__sim_impl_cudaStreamCreateWithPriority) cudaStreamCreateWithPriority = nullptr;
  decltype(&__sim_impl_cudaStreamDestroy) cudaStreamDestroy = nullptr;
  decltype(&__sim_impl_cudaStreamSynchronize) cudaStreamSynchronize = nullptr;
  decltype(&__sim_impl_cudaStreamQuery) cudaStreamQuery = nullptr;
  decltype(&__sim_impl_cudaStreamWaitEvent) cudaStreamWaitEvent = nullptr;
  decltype(&__sim_impl_cudaEventRecord) cudaEventRecord = nullptr;
  decltype(&__sim_impl_cudaEventSynchronize) cudaEventSynchronize = nullptr;
  decltype(&__sim_impl_cudaEventQuery) cudaEventQuery = nullptr;
};
inline AuditApi g_audit_api;
}  // namespace __sim
inline cudaError_t cudaDeviceSynchronize() {
  return __sim::g_audit_api.cudaDeviceSynchronize ? __sim::g_audit_api.cudaDeviceSynchronize() : __sim_impl_cudaDeviceSynchronize();
}
inline cudaError_t cudaThreadSynchronize() {
  return __sim::g_audit_api.cudaThreadSynchronize ? __sim::g_audit_api.cudaThreadSynchronize() : __sim_impl_cudaThreadSynchronize();
}
inline cudaError_t cudaFree(void* p) {
  return __sim::g_audit_api.cudaFree ? __sim::g_audit_api.cudaFree(p) : __sim_impl_cudaFree(p);
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  return __sim::g_audit_api.cudaMemcpy ? __sim::g_audit_api.cudaMemcpy(dst, src, n, kind) : __sim_impl_cudaMemcpy(dst, src, n, kind);
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s = nullptr) {
  return __sim::g_audit_api.cudaMemcpyAsync ? __sim::g_audit_api.cudaMemcpyAsync(dst, src, n, kind, s) : __sim_impl_cudaMemcpyAsync(dst, src, n, kind, s);
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) {
  return __sim::g_audit_api.cudaStreamCreate ? __sim::g_audit_api.cudaStreamCreate(s) : __sim_impl_cudaStreamCreate(s);
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  return __sim::g_audit_api.cudaStreamCreateWithFlags ? __sim::g_audit_api.cudaStreamCreateWithFlags(s, flags) : __sim_impl_cudaStreamCreateWithFlags(s, flags);
}
inline cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int prio) {
  return __sim::g_audit_api.cudaStreamCreateWithPriority ? __sim::g_audit_api.cudaStreamCreateWithPriority(s, flags, prio) : __sim_impl_cudaStreamCreateWithPriority(s, flags, prio);
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  return __sim::g_audit_api.cudaStreamDestroy ? __sim::g_audit_api.cudaStreamDestroy(s) : __sim_impl_cudaStreamDestroy(s);
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  return __sim::g_audit_api.cudaStreamSynchronize ? __sim::g_audit_api.cudaStreamSynchronize(s) : __sim_impl_cudaStreamSynchronize(s);
}
inline cudaError_t cudaStreamQuery(cudaStream_t s) {
  return __sim::g_audit_api.cudaStreamQuery ? __sim::g_audit_api.cudaStreamQuery(s) : __sim_impl_cudaStreamQuery(s);
}
inline cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags = 0) {
  return __sim::g_audit_api.cudaStreamWaitEvent ? __sim::g_audit_api.cudaStreamWaitEvent(s, e, flags) : __sim_impl_cudaStreamWaitEvent(s, e, flags);
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr) {
  return __sim::g_audit_api.cudaEventRecord ? __sim::g_audit_api.cudaEventRecord(e, s) : __sim_impl_cudaEventRecord(e, s);
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return __sim::g_audit_api.cudaEventSynchronize ? __sim::g_audit_api.cudaEventSynchronize(e) : __sim_impl_cudaEventSynchronize(e);
}
inline cudaError_t cudaEventQuery(cudaEvent_t e) {
  return __sim::g_audit_api.cudaEventQuery ? __sim::g_audit_api.cudaEventQuery(e) : __sim_impl_cudaEventQuery(e);
}

// ---------------------------------------------------------------- C API for the host
// Exported (default visibility) so the verifier can drive the simulator
// through ctypes.
#ifdef CUDA_SIM_RUNTIME_EXTERN  // defined once, in the runtime object (declared with its visibility)
#pragma GCC visibility push(default)
extern "C" {
void __sim_set_schedule(unsigned long long seed);
void __sim_set_block_order(unsigned long long seed);
unsigned long long __sim_get_schedule(void);
void __sim_set_guard_bytes(unsigned long long n);
void __sim_set_fill_byte(int b);
void __sim_set_quiet(int q);
void __sim_set_pointer_check(int on);
void __sim_set_race_check(int on);
void __sim_set_profile(int on);
const char* __sim_profile_report(void);
long long __sim_check_guards(void);
int __sim_last_error(void);
const char* __sim_diagnostics(void);
int __sim_diagnostic_count(void);
unsigned long long __sim_launch_count(void);
int __sim_live_allocations(void);
unsigned long long __sim_pool_allocations(void);
unsigned long long __sim_h2d_bytes(void);
void __sim_reset(void);
void* __sim_device_malloc(unsigned long long n);
int __sim_device_free(void* p);
void __sim_release(void);
}
#pragma GCC visibility pop
#else
#pragma GCC visibility push(default)
extern "C" {
// 0: blocks and threads in order; other seeds: shuffled blocks and interleavings.
void __sim_set_schedule(unsigned long long seed) { __sim::g_seed = seed; }
void __sim_set_block_order(unsigned long long seed) { __sim::g_seed = seed; }
unsigned long long __sim_get_schedule(void) { return __sim::g_seed; }
// Guard bytes on each side of every cudaMalloc/cudaMallocManaged (rounded up
// to 256; 0 disables); affects later allocations.
void __sim_set_guard_bytes(unsigned long long n) { __sim::g_guard = (size_t)((n + 255) / 256 * 256); }
// Poison byte for fresh allocations and dynamic shared memory; -1: none.
void __sim_set_fill_byte(int b) {
  __sim::g_fill = b < 0 ? -1 : (b & 0xFF);
  __sim::g_fill_set = true;
}
void __sim_set_quiet(int q) { __sim::g_quiet = q != 0; }
void __sim_set_pointer_check(int on) { __sim::g_ptr_check = on != 0; }
// Data-race detection in kernels (cuda_sim_race.h); on by default.
void __sim_set_race_check(int on) { __sim::g_race_on = on != 0; }
// The structural profile (cuda_sim_profile.h); off by default.  Turning it on forgets the last one.
void __sim_set_profile(int on) {
  __sim::g_prof_on = on != 0;
  __sim::g_prof_kernels.clear();
}
// The profile of the launches since __sim_set_profile(1), as JSON (valid until the next call).
const char* __sim_profile_report(void) { return __sim::prof_report(); }

// The race detector's end of gcc's ThreadSanitizer instrumentation (cuda_sim_race.h): the candidate's
// translation unit is compiled with -fsanitize=thread and linked without libtsan, so its loads,
// stores and atomics call these (hidden: they serve this library alone).
#define SIM_TSAN __attribute__((visibility("hidden"), no_sanitize_thread))
SIM_TSAN void __tsan_init(void) {}
SIM_TSAN void __tsan_func_entry(void*) {}
SIM_TSAN void __tsan_func_exit(void) {}
SIM_TSAN void __tsan_vptr_update(void**, void*) {}
SIM_TSAN void __tsan_vptr_read(void**) {}
SIM_TSAN void __tsan_ignore_thread_begin(void) {}
SIM_TSAN void __tsan_ignore_thread_end(void) {}
// With the profile on (cuda_sim_profile.h), each access is recorded too; the hook's return address
// names the access site.
#define SIM_HOOK(P, N, K)                                                                            \
  __sim::race_access(P, N, K);                                                                       \
  if (__builtin_expect(__sim::g_prof_on, 0) && !__sim::g_hook_busy) {                              \
    __sim::g_hook_busy = true;                                                                       \
    __sim::prof_access(P, N, K == __sim::kWrite, (uintptr_t)__builtin_return_address(0));           \
    __sim::g_hook_busy = false;                                                                      \
  }
#define SIM_TSAN_RW(N)                                                                           \
  SIM_TSAN void __tsan_read##N(void* p) { SIM_HOOK(p, N, __sim::kRead) }                         \
  SIM_TSAN void __tsan_write##N(void* p) { SIM_HOOK(p, N, __sim::kWrite) }                       \
  SIM_TSAN void __tsan_unaligned_read##N(void* p) { SIM_HOOK(p, N, __sim::kRead) }               \
  SIM_TSAN void __tsan_unaligned_write##N(void* p) { SIM_HOOK(p, N, __sim::kWrite) }             \
  SIM_TSAN void __tsan_volatile_read##N(void* p) { SIM_HOOK(p, N, __sim::kRead) }                \
  SIM_TSAN void __tsan_volatile_write##N(void* p) { SIM_HOOK(p, N, __sim::kWrite) }
SIM_TSAN_RW(1) SIM_TSAN_RW(2) SIM_TSAN_RW(4) SIM_TSAN_RW(8) SIM_TSAN_RW(16)
#undef SIM_TSAN_RW
SIM_TSAN void __tsan_read_range(void* p, unsigned long n) { SIM_HOOK(p, n, __sim::kRead) }
SIM_TSAN void __tsan_write_range(void* p, unsigned long n) { SIM_HOOK(p, n, __sim::kWrite) }
#undef SIM_HOOK
SIM_TSAN void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); __sim::race_fence(); }
SIM_TSAN void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
#define SIM_TSAN_ATOMIC(N, T)                                                                            \
  SIM_TSAN T __tsan_atomic##N##_load(const volatile T* a, int) {                                         \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                                        \
  }                                                                                                     \
  SIM_TSAN void __tsan_atomic##N##_store(volatile T* a, T v, int) {                                      \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                           \
  }                                                                                                     \
  SIM_TSAN T __tsan_atomic##N##_exchange(volatile T* a, T v, int) {                                      \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                                 \
  }                                                                                                     \
  SIM_TSAN T __tsan_atomic##N##_fetch_add(volatile T* a, T v, int) {                                     \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                                     \
  SIM_TSAN T __tsan_atomic##N##_fetch_sub(volatile T* a, T v, int) {                                     \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_fetch_sub(a, v, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                                     \
  SIM_TSAN T __tsan_atomic##N##_fetch_and(volatile T* a, T v, int) {                                     \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_fetch_and(a, v, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                                     \
  SIM_TSAN T __tsan_atomic##N##_fetch_or(volatile T* a, T v, int) {                                      \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST);                                                   \
  }                                                                                                     \
  SIM_TSAN T __tsan_atomic##N##_fetch_xor(volatile T* a, T v, int) {                                     \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_fetch_xor(a, v, __ATOMIC_SEQ_CST);                                                  \
  }                                                                                                     \
  SIM_TSAN T __tsan_atomic##N##_fetch_nand(volatile T* a, T v, int) {                                    \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_fetch_nand(a, v, __ATOMIC_SEQ_CST);                                                 \
  }                                                                                                     \
  SIM_TSAN int __tsan_atomic##N##_compare_exchange_strong(volatile T* a, T* c, T v, int, int) {          \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);             \
  }                                                                                                     \
  SIM_TSAN int __tsan_atomic##N##_compare_exchange_weak(volatile T* a, T* c, T v, int, int) {            \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    return __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);             \
  }                                                                                                     \
  SIM_TSAN T __tsan_atomic##N##_compare_exchange_val(volatile T* a, T c, T v, int, int) {                \
    __sim::atomic_touch(a, sizeof(T));                                                   \
    __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);                   \
    return c;                                                                                           \
  }
SIM_TSAN_ATOMIC(8, unsigned char) SIM_TSAN_ATOMIC(16, unsigned short) SIM_TSAN_ATOMIC(32, unsigned int)
SIM_TSAN_ATOMIC(64, unsigned long long)
#undef SIM_TSAN_ATOMIC
#undef SIM_TSAN

// Corrupted guard bytes: live allocations now plus those found at cudaFree.
long long __sim_check_guards(void) {
  std::lock_guard<std::recursive_mutex> lock(__sim::g_mu);
  long long n = __sim::g_freed_corrupt;
  for (auto& kv : __sim::g_allocs) {
    __sim::report_guards(kv.second, "found by __sim_check_guards");
    n += (long long)__sim::corrupt_bytes(kv.second);
  }
  return n;
}
int __sim_last_error(void) { return (int)cudaPeekAtLastError(); }
const char* __sim_diagnostics(void) { return __sim::g_diag.c_str(); }
int __sim_diagnostic_count(void) { return __sim::g_diag_count; }
unsigned long long __sim_launch_count(void) { return __sim::g_launches; }
unsigned long long __sim_pool_allocations(void) { return __sim::g_pool_alloc_count; }
unsigned long long __sim_h2d_bytes(void) { return __sim::g_h2d_bytes; }
int __sim_live_allocations(void) {
  int n = 0;
  for (auto& kv : __sim::g_allocs) n += kv.second.kind != __sim::kSymbol && kv.second.kind != __sim::kRegistered;
  return n;
}
// Clears errors (sticky too), diagnostics and guard counts; keeps allocations.
void __sim_reset(void) {
  std::lock_guard<std::recursive_mutex> lock(__sim::g_mu);
  __sim::host_waits_all();
  __sim::g_last = __sim::g_sticky = cudaSuccess;
  __sim::g_diag.clear();
  __sim::g_diag_count = 0;
  __sim::g_freed_corrupt = 0;
  __sim::g_launches = 0;
  for (auto& kv : __sim::g_allocs) kv.second.reported = __sim::corrupt_bytes(kv.second) != 0;
}
void* __sim_device_malloc(unsigned long long n) {
  void* p = nullptr;
  return cudaMalloc(&p, (size_t)n) == cudaSuccess ? p : nullptr;
}
int __sim_device_free(void* p) { return (int)__sim_impl_cudaFree(p); }
// Gives back the fiber stacks and fiber records the launches mapped (the next launch maps them again).
// Each stack has a guard page of its own, so a 1024-thread launch leaves 2048 mappings behind it, and
// a process that loaded many libraries pays for all of them at every fork.  No-op inside a launch.
void __sim_release(void) {
  std::lock_guard<std::recursive_mutex> lock(__sim::g_mu);
  if (__sim::g_cur) return;
  __sim::unmap_stacks();
  delete[] __sim::g_fibers;
  __sim::g_fibers = nullptr;
  __sim::g_fiber_cap = 0;
}


// Virtual time for the host too (see vclock_read): these definitions win inside this library.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wattributes"
int clock_gettime(clockid_t id, struct timespec* t) noexcept {
  if (!t) return -1;
  const long long ns = __sim::vclock_read(id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE, 100);
  t->tv_sec = ns / 1000000000ll;
  t->tv_nsec = ns % 1000000000ll;
  return 0;
}
int gettimeofday(struct timeval* tv, void*) noexcept {
  if (!tv) return 0;
  const long long ns = __sim::vclock_read(true, 100);
  tv->tv_sec = ns / 1000000000ll;
  tv->tv_usec = ns % 1000000000ll / 1000;
  return 0;
}
time_t time(time_t* out) noexcept {
  const time_t s = (time_t)(__sim::vclock_read(true, 100) / 1000000000ll);
  if (out) *out = s;
  return s;
}
clock_t clock(void) noexcept { return (clock_t)((__sim::vclock_read(false, 100) - __sim::g_vbase_mono) / 1000); }
}  // extern "C"
namespace std { namespace chrono { inline namespace _V2 {
steady_clock::time_point steady_clock::now() noexcept {
  return time_point(std::chrono::nanoseconds(__sim::vclock_read(false, 100)));
}
system_clock::time_point system_clock::now() noexcept {
  return time_point(std::chrono::duration_cast<system_clock::duration>(std::chrono::nanoseconds(__sim::vclock_read(true, 100))));
}
} } }  // namespace std::chrono::_V2
#pragma GCC diagnostic pop
extern "C" {
// A failed assert() in a kernel becomes cudaErrorAssert, as on a GPU (build.py
// links with -Bsymbolic so this definition wins inside the library).
void __assert_fail(const char* expr, const char* file, unsigned int line, const char* func) noexcept {
  if (__sim::g_cur) {
    __sim::kernel_fault(cudaErrorAssert, __sim::format("%s:%u: %s: %s: Assertion `%s' failed.", file, line, func,
                                                       __sim::where().c_str(), expr));
  }
  fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, func, expr);
  abort();
}
}  // extern "C"
#pragma GCC visibility pop
#endif  // CUDA_SIM_RUNTIME_EXTERN

#undef SIM_API_ENTER
#pragma GCC visibility pop

// What a drop-in's first call pays before its copies: each CUDA set-up step a drop-in may take,
// timed on its own in a fresh process after the context exists (as PolyBench's harness has it).
//
//   nvcc -O2 -arch=sm_90 first_call.cu -o first_call && ./first_call [MiB]
//
// Prints one line per step: name and milliseconds.  The steps run in the order a first drop-in
// call takes them (bench/results: the run that measured them).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

static double now_ms()
{
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#define STEP(name, ...)                                                       \
  do {                                                                        \
    double t0_ = now_ms();                                                    \
    __VA_ARGS__;                                                              \
    cudaError_t e_ = cudaDeviceSynchronize();                                 \
    std::printf("%-34s %9.3f ms%s\n", name, now_ms() - t0_,                   \
                e_ == cudaSuccess ? "" : cudaGetErrorString(e_));             \
  } while (0)

__global__ void empty_kernel(int *p) { if (p != nullptr && threadIdx.x == 1024) p[0] = 1; }
__global__ void second_kernel(double *p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] += 1.0; }

int main(int argc, char **argv)
{
  const size_t mib = argc > 1 ? (size_t)std::atoi(argv[1]) : 16;
  const size_t bytes = mib << 20;
  STEP("context (cudaFree(0))", cudaFree(0));
  // argv[2]: which device allocation comes first in the process ("plain", "async", else the pool's).
  const char *first = argc > 2 ? argv[2] : "pool";
  void *d0 = nullptr;
  if (std::strcmp(first, "plain") == 0) STEP("cudaMalloc FIRST in the process", cudaMalloc(&d0, bytes));
  if (std::strcmp(first, "async") == 0) STEP("cudaMallocAsync FIRST (default pool)", cudaMallocAsync(&d0, bytes, 0));
  cudaMemPool_t pool;
  STEP("cudaMemPoolCreate + attr", {
    cudaMemPoolProps props;
    std::memset(&props, 0, sizeof(props));
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPoolCreate(&pool, &props);
    unsigned long long keep = ~0ull;
    cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  });
  cudaStream_t s[3];
  STEP("3 x cudaStreamCreate", for (auto &x : s) cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking));
  cudaEvent_t ev[33];
  STEP("33 x cudaEventCreate", for (auto &x : ev) cudaEventCreateWithFlags(&x, cudaEventDisableTiming));
  std::vector<std::thread> th;
  STEP("7 x std::thread", for (int i = 0; i < 7; ++i) th.emplace_back([] {}));
  for (auto &t : th) t.join();
  void *ring = nullptr;
  STEP("cudaMallocHost 32 MiB (ring)", cudaMallocHost(&ring, (size_t)32 << 20));
  void *ring2 = nullptr;
  STEP("cudaMallocHost 4 MiB", cudaMallocHost(&ring2, (size_t)4 << 20));
  void *d1 = nullptr, *d2 = nullptr, *d3 = nullptr;
  STEP("cudaMallocFromPoolAsync (pool, first)", cudaMallocFromPoolAsync(&d1, bytes, pool, s[0]));
  STEP("cudaMallocFromPoolAsync (pool, second)", cudaMallocFromPoolAsync(&d3, bytes, pool, s[0]));
  STEP("cudaMalloc (plain)", cudaMalloc(&d2, bytes));
  void *d4 = nullptr;
  STEP("cudaMallocAsync (default pool)", cudaMallocAsync(&d4, bytes, s[0]));
  std::vector<char> host(bytes, 1);
  STEP("cudaMemcpy H2D pageable", cudaMemcpy(d2, host.data(), bytes, cudaMemcpyHostToDevice));
  STEP("cudaMemcpy H2D pageable again", cudaMemcpy(d2, host.data(), bytes, cudaMemcpyHostToDevice));
  STEP("cudaMemcpyAsync H2D pinned ring", cudaMemcpyAsync(d2, ring, (size_t)32 << 20 < bytes ? (size_t)32 << 20 : bytes, cudaMemcpyHostToDevice, s[1]));
  STEP("cudaHostRegister (host vector)", cudaHostRegister(host.data(), bytes, cudaHostRegisterDefault));
  STEP("cudaMemcpy H2D registered", cudaMemcpy(d2, host.data(), bytes, cudaMemcpyHostToDevice));
  STEP("cudaHostUnregister", cudaHostUnregister(host.data()));
  STEP("first launch (lazy module load)", empty_kernel<<<1, 32, 0, s[0]>>>(nullptr));
  STEP("second launch, same kernel", empty_kernel<<<1, 32, 0, s[0]>>>(nullptr));
  STEP("first launch of another kernel", second_kernel<<<64, 256, 0, s[0]>>>((double *)d2, 1024));
  STEP("cudaMemcpy D2H pageable", cudaMemcpy(host.data(), d2, bytes, cudaMemcpyDeviceToHost));
  STEP("cudaFreeAsync pool", cudaFreeAsync(d1, s[0]));
  STEP("cudaFree plain", cudaFree(d2));
  STEP("cudaFreeHost ring", cudaFreeHost(ring));
  return 0;
}

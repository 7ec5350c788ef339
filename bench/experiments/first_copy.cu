// Where a process's first copy-out goes (issue 39): one variant per process, the CUDA context made
// before any timing (as the side-by-side harness does).  Build: nvcc -O2 -arch=sm_90 first_copy.cu -o fc
// Run:   ./fc VARIANT MB     VARIANT: fresh | touched | twice | reg | reg_touched | h2d | touch
// Prints one line: the variant, the size and the milliseconds of each timed step.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

static double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static char *fresh(size_t n) {
  void *p = nullptr;
  if (posix_memalign(&p, 4096, n) != 0) { std::perror("posix_memalign"); std::exit(1); }
  return static_cast<char *>(p);
}

static void touch(char *p, size_t n, int threads) {
  std::vector<std::thread> ts;
  size_t part = (n + threads - 1) / threads;
  for (int t = 0; t < threads; t++)
    ts.emplace_back([=] { size_t lo = t * part, hi = lo + part < n ? lo + part : n; if (lo < hi) std::memset(p + lo, 1, hi - lo); });
  for (auto &t : ts) t.join();
}

int main(int argc, char **argv) {
  if (argc < 3) { std::fprintf(stderr, "usage: %s VARIANT MB\n", argv[0]); return 2; }
  std::string v = argv[1];
  size_t n = static_cast<size_t>(std::atof(argv[2]) * 1048576.0);
  cudaFree(0);
  char *d = nullptr;
  cudaMalloc(&d, n);
  cudaMemset(d, 7, n);
  cudaDeviceSynchronize();
  std::printf("%s %.1f MB:", v.c_str(), n / 1048576.0);
  double t0, t1, t2, t3;
  if (v == "fresh" || v == "touched" || v == "twice") {
    char *h = fresh(n);
    if (v == "touched") { t0 = now_ms(); touch(h, n, 1); std::printf(" touch %.3f", now_ms() - t0); }
    t0 = now_ms(); cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); t1 = now_ms();
    std::printf(" d2h %.3f", t1 - t0);
    if (v == "twice") {
      char *g = fresh(n);
      t0 = now_ms(); cudaMemcpy(g, d, n, cudaMemcpyDeviceToHost); t1 = now_ms();
      std::printf(" d2h_second_fresh %.3f", t1 - t0);
      t0 = now_ms(); cudaMemcpy(g, d, n, cudaMemcpyDeviceToHost); t1 = now_ms();
      std::printf(" d2h_again_same %.3f", t1 - t0);
    }
  } else if (v == "reg" || v == "reg_touched") {
    char *h = fresh(n);
    if (v == "reg_touched") touch(h, n, 1);
    t0 = now_ms(); cudaError_t e = cudaHostRegister(h, n, cudaHostRegisterDefault); t1 = now_ms();
    cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); t2 = now_ms();
    cudaHostUnregister(h); t3 = now_ms();
    std::printf(" register %.3f d2h %.3f unregister %.3f (%s)", t1 - t0, t2 - t1, t3 - t2, cudaGetErrorString(e));
  } else if (v == "h2d") {
    char *h = fresh(n);
    touch(h, n, 1);
    t0 = now_ms(); cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); t1 = now_ms();
    cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); t2 = now_ms();
    std::printf(" h2d_first %.3f h2d_second %.3f", t1 - t0, t2 - t1);
  } else if (v == "touch") {
    for (int th : {1, 2, 4, 8, 16}) {
      char *h = fresh(n);
      t0 = now_ms(); touch(h, n, th); std::printf(" touch_%dthreads %.3f", th, now_ms() - t0);
    }
  } else if (v == "pinned") {
    char *h = nullptr;
    t0 = now_ms(); cudaMallocHost(&h, n); t1 = now_ms();
    cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); t2 = now_ms();
    char *u = fresh(n);
    std::memcpy(u, h, n); t3 = now_ms();
    std::printf(" mallochost %.3f d2h %.3f memcpy_to_fresh %.3f", t1 - t0, t2 - t1, t3 - t2);
  } else {
    std::fprintf(stderr, "unknown variant %s\n", v.c_str());
    return 2;
  }
  std::printf("\n");
  return 0;
}

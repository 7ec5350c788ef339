// cuda_sim_profile.h: a structural profile of what kernels execute in the CPU simulator (included by
// cuda_sim.h inside namespace __sim, after cuda_sim_race.h; not a header of its own).  Off unless
// __sim_set_profile(1) was called: each ThreadSanitizer hook then tests one flag more.
//
// The hooks of gcc's ThreadSanitizer instrumentation (cuda_sim_race.h) see every load and store of
// kernel code; their return address names the access site (one instruction of the kernel's
// machine code).  While a block runs, each thread's accesses to device allocations and shared
// memory are kept as (site, address, bytes, kind).  When the block reaches a barrier or ends (the
// fibers of a block switch only there and at warp collectives), the records are grouped warp by
// warp: the n-th execution of a site by each lane of a warp is one warp-level request, as the n-th
// dynamic instance of one SASS instruction would be.  Per request:
//
// * global memory: the distinct 32-byte sectors its bytes touch, against the fewest sectors that
//   could hold the distinct bytes it uses (ceil(bytes / 32));
// * shared memory: wavefronts, the most distinct 4-byte words that fall in one of the 32 banks
//   (lanes reading one word share it), against ceil(distinct words / 32); the excess is the
//   replays of a bank conflict;
// * divergence: the request is divergent when fewer lanes made it than the warp has in the block
//   (lanes split by a branch, or some exited).  The simulator sees no branch instruction: this is
//   the per-site lane participation of memory accesses, so a branch whose sides touch no memory
//   is not seen.
//
// Also counted per kernel: barrier arrivals, atomics (on device or shared memory), bytes of global traffic (for arithmetic
// intensity) and thread-level executions per site (the flop count is derived from them by the
// caller, transpile/verify/profile.py).  Memory is bounded: between two flushes each thread keeps
// its first kProfMaxBuffered / (threads of the block) accesses (at least 64; the rest are counted as
// dropped), and once a launch has recorded kProfMaxLaunchEvents, its later blocks run unrecorded
// (blocks_profiled says how many were).

struct ProfEvent {
  uintptr_t site;
  uintptr_t addr;
  uint32_t size;
  uint8_t kind;  // 0 global load, 1 global store, 2 shared load, 3 shared store
};

struct ProfKernel {
  std::string name;
  unsigned long long launches = 0, blocks = 0, blocks_profiled = 0, threads_profiled = 0;
  unsigned grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};  // the launch with the most blocks
  unsigned long long dyn_smem = 0;
  unsigned long long requests[4] = {0, 0, 0, 0};   // warp-level, by kind
  unsigned long long divergent[4] = {0, 0, 0, 0};  // of them, made by part of the warp only
  unsigned long long bytes[4] = {0, 0, 0, 0};      // thread-level bytes, by kind
  unsigned long long sectors[2] = {0, 0}, min_sectors[2] = {0, 0};  // global loads, stores
  unsigned long long wavefronts = 0, ideal_wavefronts = 0;          // shared memory
  unsigned long long barriers = 0, atomics = 0, atomic_bytes = 0, dropped = 0;
  std::map<uintptr_t, unsigned long long> sites;  // site address -> thread-level executions
};

constexpr size_t kProfMaxBuffered = (size_t)1 << 20;             // records held between two flushes (24 MB)
constexpr unsigned long long kProfMaxLaunchEvents = 1ull << 24;  // records per launch

inline bool g_prof_on = false;     // __sim_set_profile
inline bool g_prof_block = false;  // the running block is recorded
inline std::vector<std::vector<ProfEvent>> g_prof_events;  // per thread of the running block
inline size_t g_prof_buffered = 0;
inline unsigned long long g_prof_launch_events = 0;
inline std::vector<ProfKernel> g_prof_kernels;
inline size_t g_prof_cur = 0;  // index into g_prof_kernels of the running launch's kernel
inline std::string g_prof_text;  // the last report
// The static __shared__ variables, kept apart from g_shared: that vector grows in kernel code (a
// declaration reached the first time), whose instrumented std::vector internals would otherwise be
// looked up in it half-updated.
inline std::vector<std::pair<uintptr_t, uintptr_t>> g_prof_shared;

// Where an address lies: 0 a device allocation, 2 shared memory (static or dynamic), -1 elsewhere
// (the thread's stack, host memory, __constant__ data).
SIM_RT __attribute__((no_sanitize_thread)) int prof_space(uintptr_t a) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (a >= (uintptr_t)dyn_smem && a < (uintptr_t)dyn_smem + kMaxDynSmem) return 2;
  for (const auto& v : g_prof_shared)
    if (a >= v.first && a < v.second) return 2;
  auto it = g_allocs.upper_bound(a);
  if (it == g_allocs.begin()) return -1;
  --it;
  return a < it->first + it->second.size ? 0 : -1;
}

// One access of kernel code (from the ThreadSanitizer hooks; site: the hook's return address).
SIM_RT __attribute__((no_sanitize_thread)) void prof_access(const volatile void* p, size_t n, int write, uintptr_t site) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_prof_block || !g_cur) return;
  const uintptr_t a = (uintptr_t)p;
  const int space = prof_space(a);
  if (space < 0) return;
  ProfKernel& k = g_prof_kernels[g_prof_cur];
  std::vector<ProfEvent>& mine = g_prof_events[g_cur->linear];
  // Each thread keeps its first kProfMaxBuffered / threads accesses of a stretch between barriers
  // (so the block's are bounded); the lanes of a warp running the same code keep the same ones, so
  // the cut makes no warp look split.
  if (mine.size() >= std::max<size_t>(64, kProfMaxBuffered / std::max(1u, g_nthreads))) {
    ++k.dropped;
    return;
  }
  const uint8_t kind = (uint8_t)(space + (write ? 1 : 0));
  mine.push_back(ProfEvent{site, a, (uint32_t)std::min<size_t>(n, 4096), kind});
  ++g_prof_buffered;
  ++g_prof_launch_events;
}

// A static __shared__ variable registered (register_shared).
SIM_RT __attribute__((no_sanitize_thread)) void prof_add_shared(void* p, size_t n) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (g_prof_on) g_prof_shared.emplace_back((uintptr_t)p, (uintptr_t)p + n);
}

SIM_RT __attribute__((no_sanitize_thread)) void prof_atomic(const volatile void* p, size_t n) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_prof_block || !g_cur) return;
  // Only atomics on device or shared memory: the compiler's own (the guard of a function-local
  // static, such as a __shared__ variable's registration) are not the kernel's.
  const int space = prof_space((uintptr_t)p);
  if (space < 0) return;
  ProfKernel& k = g_prof_kernels[g_prof_cur];
  ++k.atomics;
  if (space == 0) k.atomic_bytes += n;
}

// A launch begins: find (or add) its kernel's record.
SIM_RT __attribute__((no_sanitize_thread)) void prof_launch_begin(const char* name, dim3 grid, dim3 block, size_t smem, unsigned nthreads) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_prof_on) return;
  g_prof_shared.clear();
  for (const SharedVar& v : g_shared) g_prof_shared.emplace_back((uintptr_t)v.p, (uintptr_t)v.p + v.n);
  size_t i = 0;
  while (i < g_prof_kernels.size() && g_prof_kernels[i].name != name) ++i;
  if (i == g_prof_kernels.size()) {
    g_prof_kernels.emplace_back();
    g_prof_kernels.back().name = name;
  }
  g_prof_cur = i;
  ProfKernel& k = g_prof_kernels[i];
  ++k.launches;
  const unsigned long long nb = (unsigned long long)grid.x * grid.y * grid.z;
  if (nb >= (unsigned long long)k.grid[0] * k.grid[1] * k.grid[2]) {
    k.grid[0] = grid.x, k.grid[1] = grid.y, k.grid[2] = grid.z;
    k.block[0] = block.x, k.block[1] = block.y, k.block[2] = block.z;
    k.dyn_smem = smem;
  }
  k.blocks += nb;
  g_prof_launch_events = 0;
  g_prof_events.resize(nthreads);
  for (auto& v : g_prof_events) v.clear();
  g_prof_buffered = 0;
}

// The records of the running block grouped into warp-level requests, then forgotten.
SIM_RT __attribute__((no_sanitize_thread)) void prof_flush() {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_prof_block || g_prof_buffered == 0) return;
  ProfKernel& k = g_prof_kernels[g_prof_cur];
  const unsigned n = g_nthreads;
  struct Req {
    uint8_t kind;
    unsigned lanes;
    std::vector<std::pair<uintptr_t, uint32_t>> parts;
  };
  std::map<std::pair<uintptr_t, unsigned>, Req> reqs;
  std::map<uintptr_t, unsigned> occ;
  std::vector<std::pair<uintptr_t, uintptr_t>> iv;
  std::vector<std::pair<unsigned, uintptr_t>> words;
  for (unsigned base = 0; base < n; base += 32) {
    const unsigned present = std::min(32u, n - base);
    reqs.clear();
    for (unsigned l = 0; l < present; ++l) {
      occ.clear();
      for (const ProfEvent& e : g_prof_events[base + l]) {
        ++k.sites[e.site];
        k.bytes[e.kind] += e.size;
        Req& r = reqs[{e.site, occ[e.site]++}];
        if (r.parts.empty()) r.kind = e.kind, r.lanes = 0;
        ++r.lanes;
        r.parts.emplace_back(e.addr, e.size);
      }
      g_prof_events[base + l].clear();
    }
    for (auto& kv : reqs) {
      Req& r = kv.second;
      ++k.requests[r.kind];
      if (r.lanes < present) ++k.divergent[r.kind];
      if (r.kind < 2) {  // sectors touched, and the fewest that hold the distinct bytes
        iv.clear();
        for (auto& pr : r.parts) iv.emplace_back(pr.first, pr.first + pr.second);
        std::sort(iv.begin(), iv.end());
        unsigned long long bytes = 0, sectors = 0;
        uintptr_t cur_lo = iv[0].first, cur_hi = iv[0].second, last_sector = ~(uintptr_t)0;
        auto close = [&](uintptr_t lo, uintptr_t hi) {
          bytes += hi - lo;
          uintptr_t s0 = lo >> 5, s1 = (hi - 1) >> 5;
          if (s0 == last_sector) ++s0;
          if (s1 >= s0) sectors += s1 - s0 + 1;
          last_sector = (hi - 1) >> 5;
        };
        for (size_t i = 1; i < iv.size(); ++i) {
          if (iv[i].first <= cur_hi) {
            cur_hi = std::max(cur_hi, iv[i].second);
          } else {
            close(cur_lo, cur_hi);
            cur_lo = iv[i].first, cur_hi = iv[i].second;
          }
        }
        close(cur_lo, cur_hi);
        k.sectors[r.kind] += sectors;
        k.min_sectors[r.kind] += (bytes + 31) / 32;
      } else {  // shared memory: distinct words per bank
        words.clear();
        for (auto& pr : r.parts)
          for (uintptr_t w = pr.first >> 2; w <= (pr.first + pr.second - 1) >> 2; ++w)
            words.emplace_back((unsigned)(w & 31), w);
        std::sort(words.begin(), words.end());
        words.erase(std::unique(words.begin(), words.end()), words.end());
        unsigned most = 0, run = 0, bank = 32;
        for (auto& w : words) {
          run = w.first == bank ? run + 1 : 1;
          bank = w.first;
          most = std::max(most, run);
        }
        k.wavefronts += most;
        k.ideal_wavefronts += std::max<size_t>(1, (words.size() + 31) / 32);
      }
    }
  }
  g_prof_buffered = 0;
}

SIM_RT __attribute__((no_sanitize_thread)) void prof_block_begin() {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  g_prof_block = g_prof_on && g_prof_launch_events < kProfMaxLaunchEvents;
  if (!g_prof_block) return;
  ProfKernel& k = g_prof_kernels[g_prof_cur];
  ++k.blocks_profiled;
  k.threads_profiled += g_nthreads;
}

SIM_RT __attribute__((no_sanitize_thread)) void prof_block_end() {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  prof_flush();
  g_prof_block = false;
}

// A block barrier released `count` threads.
SIM_RT __attribute__((no_sanitize_thread)) void prof_barrier(size_t count) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_prof_block) return;
  prof_flush();
  g_prof_kernels[g_prof_cur].barriers += count;
}

// The profile as JSON: one object per kernel, sites as offsets into the library.
SIM_RT __attribute__((no_sanitize_thread)) const char* prof_report() {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  std::string s = "[";
  for (size_t i = 0; i < g_prof_kernels.size(); ++i) {
    const ProfKernel& k = g_prof_kernels[i];
    std::string name;
    for (const char* c = k.name.c_str(); *c; ++c) {
      if (*c == '"' || *c == '\\') name += '\\';
      if ((unsigned char)*c >= 32) name += *c;
    }
    s += format("%s{\"kernel\":\"%s\",\"launches\":%llu,\"blocks\":%llu,\"blocks_profiled\":%llu,"
                "\"threads_profiled\":%llu,\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"dynamic_smem\":%llu,",
                i ? "," : "", name.c_str(), k.launches, k.blocks, k.blocks_profiled, k.threads_profiled, k.grid[0],
                k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2], k.dyn_smem);
    s += format("\"requests\":[%llu,%llu,%llu,%llu],\"divergent\":[%llu,%llu,%llu,%llu],"
                "\"bytes\":[%llu,%llu,%llu,%llu],\"sectors\":[%llu,%llu],\"min_sectors\":[%llu,%llu],"
                "\"wavefronts\":%llu,\"ideal_wavefronts\":%llu,\"barriers\":%llu,\"atomics\":%llu,"
                "\"atomic_bytes\":%llu,\"dropped\":%llu,\"sites\":[",
                k.requests[0], k.requests[1], k.requests[2], k.requests[3], k.divergent[0], k.divergent[1],
                k.divergent[2], k.divergent[3], k.bytes[0], k.bytes[1], k.bytes[2], k.bytes[3], k.sectors[0],
                k.sectors[1], k.min_sectors[0], k.min_sectors[1], k.wavefronts, k.ideal_wavefronts, k.barriers,
                k.atomics, k.atomic_bytes, k.dropped);
    bool first = true;
    for (const auto& kv : k.sites) {
      Dl_info info{};
      const uintptr_t base = dladdr((void*)kv.first, &info) && info.dli_fbase ? (uintptr_t)info.dli_fbase : 0;
      s += format("%s[%llu,%llu]", first ? "" : ",", (unsigned long long)(kv.first - base), kv.second);
      first = false;
    }
    s += "]}";
  }
  g_prof_text = s + "]";
  return g_prof_text.c_str();
}

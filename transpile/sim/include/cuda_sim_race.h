// cuda_sim_race.h: data-race detection for the CPU simulator (included by cuda_sim.h inside
// namespace __sim; not a header of its own).
//
// The simulator's threads are fibers that switch only at barriers, warp collectives and atomics,
// so a plain read-modify-write (`bins[b] += 1` by every thread of a block) is never interleaved
// and gives the sequential answer here, and a lost update on a GPU.  Instead of hoping a schedule
// shows it, every access of kernel code to device memory and shared memory is recorded and checked
// for happens-before:
//
// * The candidate's translation unit is compiled with gcc's ThreadSanitizer instrumentation
//   (-fsanitize=thread, function entry/exit off) but linked without its runtime: the calls gcc
//   inserts (__tsan_read4, __tsan_write8, __tsan_read_range, __tsan_atomic32_fetch_add, ...) land in
//   the hooks defined with the C API in cuda_sim.h, which are ours.  Outside a kernel, and for
//   addresses outside the tracked ranges (device allocations, static and dynamic __shared__), a hook
//   returns after two compares.
// * Each tracked range has a shadow cell per 4-byte granule: the last write (generation, block,
//   thread, bytes, atomic or not) and the last reads by two distinct threads.  A generation counter
//   (g_gen) moves at every block start, block barrier and warp synchronisation; an access by thread
//   u at generation s is ordered before thread t's access now iff u == t, or s < the block's last
//   barrier (g_bar_gen), or u and t share a warp and s < that warp's last __syncwarp / shuffle /
//   vote (g_warp_gen), or t took a lock that u released after s (atomicExch or atomicCAS by u,
//   then a successful atomicCAS by t on the same address: race_lock, g_acq_gen).  Two unordered
//   accesses to a common byte, a read (an atomic reads too) and a write, not both atomics, are a
//   race; two plain writes alone are not reported (one flag value stored by many threads is
//   harmless; a read after them is checked, and a difference shows in the values).  Cells of
//   earlier generations need no clearing.
// * Between blocks of one launch nothing is ordered (the simulator runs blocks one after another,
//   in a seeded order): a read (or atomic) of a byte another block of the same launch wrote, or a
//   write of one it read, is an inter-block race, unless both are atomics, or the block has done a
//   fence and an atomic (the threadfence-reduction pattern: a block counts itself done with an
//   atomic after a fence, the last one reads the others' results).
//
// The first race of a launch is reported (a diagnostic starting "data race"), the checks are off
// for the rest of that launch (bounded cost).  Kept lenient so that correct code never fails: a
// partial-mask __syncwarp orders the whole warp; a shuffle or vote orders like __syncwarp; only the
// two latest readers of a granule are remembered; a granule written by two threads in one
// generation keeps the last writer.  Not tracked: __device__ variables, __constant__ data, local
// arrays.

struct RaceCell {
  uint32_t wgen;      // generation of the last write (0: none)
  uint32_t wblk;      // its block (linear index)
  uint16_t wtid;      // its thread (linear index in the block)
  uint8_t wmask;      // bytes of the granule it wrote
  uint8_t watomic;    // it was an atomic
  uint32_t rgen[2];   // the last reads by two distinct threads
  uint32_t rblk[2];
  uint16_t rtid[2];
  uint8_t rmask[2];
};

struct RaceRange {
  uintptr_t lo, hi;
  int what;                 // 0 device allocation, 1 static __shared__, 2 dynamic shared memory
  unsigned long long id;    // allocation id
  const char* name;         // shared variable name, or nullptr
  int arg;                  // index of the kernel argument pointing into it, or -1
  RaceCell* cells;          // lazily allocated, kept between launches (see g_race_shadow)
};

struct RaceShadow { size_t n; RaceCell* cells; };

inline bool g_race_on = true;          // __sim_set_race_check
inline bool g_race_active = false;     // inside a block of a launch still being checked
// Inside a hook: in a whole-file build (build.py, split=False) the detector's and the profile's own
// code is compiled with the candidate's -fsanitize=thread, so their container accesses call the
// hooks again; those are not the kernel's accesses (and recursing made gemm_tiled run for minutes).
inline bool g_hook_busy = false;
// Held by every function of the detector and the profile: the hooks ignore what they touch.
struct HookBusy {
  bool was;
  HookBusy() : was(g_hook_busy) { g_hook_busy = true; }
  ~HookBusy() { g_hook_busy = was; }
  HookBusy(const HookBusy&) = delete;
  HookBusy& operator=(const HookBusy&) = delete;
};
inline uint32_t g_gen = 1;             // moves at every block start, barrier, warp sync
inline uint32_t g_bar_gen = 0;         // generation at the running block's last barrier (or start)
inline uint32_t g_launch_gen = 0;      // generation at the start of the launch
inline uint32_t g_block_gen = 0;       // generation at the start of the running block
inline uint32_t g_race_block = 0;      // linear index of the running block
inline bool g_race_block_synced = false;  // the running block did a fence and an atomic
inline std::vector<uint32_t> g_warp_gen;  // per warp of the running block
inline std::vector<uint32_t> g_acq_gen;   // per thread: generation of its last lock acquisition
inline std::map<uintptr_t, std::pair<uint32_t, uint16_t>> g_release;  // address -> (generation, thread)
inline std::vector<uint8_t> g_thread_sync;  // per thread: bit 0 fenced, bit 1 atomic done
inline std::vector<RaceRange> g_race_ranges;  // sorted by lo
inline std::map<uintptr_t, RaceShadow> g_race_shadow;  // by range start: kept while the range lives
inline uintptr_t g_race_lo = 0, g_race_hi = 0;
inline size_t g_race_last = 0;  // index of the range hit last
inline std::vector<const void*> g_race_args;  // the launch's pointer arguments, in order

enum RaceKind : int { kRead = 0, kWrite = 1, kAtomic = 2 };

SIM_RT __attribute__((no_sanitize_thread)) void race_fresh_generation() {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (++g_gen == 0xFFFFFFF0u) {  // wrapped: forget every record (never in practice)
    for (auto& kv : g_race_shadow) std::memset(kv.second.cells, 0, kv.second.n * sizeof(RaceCell));
    g_gen = 1;
  }
}

// A launch begins: track what its kernel can reach.
SIM_RT __attribute__((no_sanitize_thread)) void race_launch_begin(unsigned nthreads) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  g_race_active = false;
  if (!g_race_on) {
    g_race_ranges.clear();
    return;
  }
  std::vector<RaceRange> ranges;
  for (auto& kv : g_allocs)
    ranges.push_back(RaceRange{kv.first, kv.first + kv.second.size, 0, kv.second.id, nullptr, -1, nullptr});
  for (const SharedVar& v : g_shared)
    ranges.push_back(RaceRange{(uintptr_t)v.p, (uintptr_t)v.p + v.n, 1, 0, v.name, -1, nullptr});
  ranges.push_back(RaceRange{(uintptr_t)dyn_smem, (uintptr_t)dyn_smem + kMaxDynSmem, 2, 0, nullptr, -1, nullptr});
  std::sort(ranges.begin(), ranges.end(), [](const RaceRange& a, const RaceRange& b) { return a.lo < b.lo; });
  // Keep the shadows of ranges that are still there; drop the others.
  std::map<uintptr_t, RaceShadow> keep;
  for (RaceRange& r : ranges) {
    auto it = g_race_shadow.find(r.lo);
    if (it != g_race_shadow.end() && it->second.n == (r.hi - r.lo + 3) / 4) {
      r.cells = it->second.cells;
      keep[r.lo] = it->second;
      g_race_shadow.erase(it);
    }
    for (size_t k = 0; k < g_race_args.size(); ++k)
      if ((uintptr_t)g_race_args[k] >= r.lo && (uintptr_t)g_race_args[k] < r.hi && r.arg < 0) r.arg = (int)k;
  }
  for (auto& kv : g_race_shadow) std::free(kv.second.cells);
  g_race_shadow.swap(keep);
  g_race_ranges.swap(ranges);
  g_race_lo = g_race_ranges.empty() ? 0 : g_race_ranges.front().lo;
  g_race_hi = g_race_ranges.empty() ? 0 : g_race_ranges.back().hi;
  for (const RaceRange& r : g_race_ranges) g_race_hi = std::max(g_race_hi, r.hi);
  g_race_last = 0;
  race_fresh_generation();
  g_launch_gen = g_gen;
  g_warp_gen.assign((nthreads + 31) / 32, 0);
  g_acq_gen.assign(nthreads, 0);
  g_thread_sync.assign(nthreads, 0);
}

// A block of the launch begins (b: its linear index in the grid).
SIM_RT __attribute__((no_sanitize_thread)) void race_block_begin(unsigned long long b) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_race_on || g_race_ranges.empty()) return;
  race_fresh_generation();
  g_bar_gen = g_block_gen = g_gen;
  g_race_block = (uint32_t)b;
  g_race_block_synced = false;
  std::fill(g_warp_gen.begin(), g_warp_gen.end(), 0u);
  std::fill(g_acq_gen.begin(), g_acq_gen.end(), 0u);
  std::fill(g_thread_sync.begin(), g_thread_sync.end(), (uint8_t)0);
  g_release.clear();
  g_race_active = true;
}

inline void race_block_end() { g_race_active = false; }

// A static __shared__ variable registered while a kernel runs (its declaration was reached for the
// first time): tracked from now on.
SIM_RT __attribute__((no_sanitize_thread)) void race_add_shared(void* p, size_t n, const char* name) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_race_active) return;
  RaceRange r{(uintptr_t)p, (uintptr_t)p + n, 1, 0, name, -1, nullptr};
  auto at = std::lower_bound(g_race_ranges.begin(), g_race_ranges.end(), r,
                             [](const RaceRange& a, const RaceRange& b) { return a.lo < b.lo; });
  g_race_ranges.insert(at, r);
  g_race_lo = std::min(g_race_lo, r.lo);
  g_race_hi = std::max(g_race_hi, r.hi);
  g_race_last = 0;
}

inline void race_barrier() {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_race_active) return;
  race_fresh_generation();
  g_bar_gen = g_gen;
}

inline void race_warp_sync(unsigned warp) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_race_active || warp >= g_warp_gen.size()) return;
  race_fresh_generation();
  g_warp_gen[warp] = g_gen;
}

inline void race_fence() {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_race_active || !g_cur) return;
  uint8_t& s = g_thread_sync[g_cur->linear];
  s |= 1;
  if (s == 3) g_race_block_synced = true;
}

// Locks.  An atomicExch or a successful atomicCAS by thread u at `a` releases what u did before it;
// a successful atomicCAS by another thread t at `a` acquires it (a spin lock's critical sections
// are ordered).  atomicAdd & co. neither release nor acquire: a dummy atomic orders nothing.  In the
// in-order schedule an uncontended "lock" whose CAS result is ignored looks like a real one; seeded
// schedules yield at atomics, and there the ignored failure leaves the accesses unordered.
SIM_RT __attribute__((no_sanitize_thread)) void race_lock(const void* a, bool exch, bool success) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_race_active || !g_cur || !success) return;
  const unsigned t = g_cur->linear;
  auto it = g_release.find((uintptr_t)a);
  if (!exch && it != g_release.end() && it->second.second != t) g_acq_gen[t] = std::max(g_acq_gen[t], it->second.first);
  race_fresh_generation();
  g_release[(uintptr_t)a] = {g_gen, (uint16_t)t};
}

inline bool race_ordered(uint32_t gen, uint16_t u, unsigned t) {
  return u == t || gen < g_bar_gen || (u / 32 == t / 32 && gen < g_warp_gen[t / 32]) || gen < g_acq_gen[t];
}

SIM_RT __attribute__((no_sanitize_thread)) std::string race_place(const RaceRange& r, uintptr_t a) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  const size_t off = a - r.lo;
  if (r.what == 1) return format("byte %zu of __shared__ %s (%zu bytes)", off, r.name ? r.name : "?", r.hi - r.lo);
  if (r.what == 2) return format("byte %zu of the dynamic shared memory", off);
  std::string s = format("byte %zu of device allocation #%llu (%zu bytes", off, r.id, r.hi - r.lo);
  if (r.arg >= 0) s += format(", pointer argument #%d of the kernel", r.arg + 1);
  return s + ")";
}

inline const char* race_kind_name(int k) { return k == kRead ? "reads" : k == kWrite ? "writes" : "updates atomically"; }

SIM_RT __attribute__((no_sanitize_thread)) std::string race_thread(uint32_t blk, uint16_t tid) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  const unsigned bx = blockDim.x, by = blockDim.y;
  const unsigned gx = gridDim.x, gy = gridDim.y;
  return format("thread (%u,%u,%u) of block (%u,%u,%u)", tid % bx, tid / bx % by, tid / (bx * by), blk % gx,
                blk / gx % gy, blk / (gx * gy));
}

SIM_RT __attribute__((no_sanitize_thread)) void race_report(const RaceRange& r, uintptr_t a, bool between_blocks, uint32_t oblk, uint16_t otid, int okind,
                        int kind) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  g_race_active = false;  // one report a launch; the rest of it runs unchecked
  g_race_ranges.clear();  // and the hooks return at once
  g_race_lo = g_race_hi = 0;
  const std::string first = race_thread(oblk, otid), second = race_thread(g_race_block, (uint16_t)g_cur->linear);
  diagnose(format("data race %sin kernel %s: %s %s %s and %s %s it with no %s between them%s",
                  between_blocks ? "between blocks " : "", g_kernel, first.c_str(), race_kind_name(okind),
                  race_place(r, a).c_str(), second.c_str(), race_kind_name(kind),
                  between_blocks ? "flag, fence or grid synchronisation" : "__syncthreads() or __syncwarp()",
                  between_blocks ? " (blocks run in any order on a GPU)"
                  : kind == kRead || okind == kRead ? " (the read may see either value on a GPU)"
                                                    : " (updates are lost on a GPU: use an atomic)"));
}

// One access of `n` bytes at `a` by the running thread.
SIM_RT __attribute__((no_sanitize_thread)) void race_access_slow(uintptr_t a, size_t n, int kind) {
  HookBusy hook_busy_;  // this code's own accesses are not the kernel's (whole-file builds)
  if (!g_cur) return;
  size_t k = g_race_last;
  const RaceRange* r = &g_race_ranges[k];
  if (a < r->lo || a >= r->hi) {
    size_t lo = 0, hi = g_race_ranges.size();  // the last range starting at or below a
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (g_race_ranges[mid].lo <= a) lo = mid;
      else hi = mid;
    }
    r = &g_race_ranges[lo];
    if (a < r->lo || a >= r->hi) return;
    g_race_last = k = lo;
  }
  RaceRange& rr = g_race_ranges[k];
  if (!rr.cells) {
    size_t cells = (rr.hi - rr.lo + 3) / 4;
    rr.cells = static_cast<RaceCell*>(std::calloc(cells, sizeof(RaceCell)));
    if (!rr.cells) return;
    g_race_shadow[rr.lo] = RaceShadow{cells, rr.cells};
  }
  const uintptr_t end = std::min<uintptr_t>(a + n, rr.hi);
  const unsigned t = g_cur->linear;
  // Shared memory is the block's own: what earlier blocks did there is another copy on a GPU.
  const uint32_t now = g_gen, blk = g_race_block, lg = rr.what == 0 ? g_launch_gen : g_block_gen;
  for (uintptr_t p = a; p < end;) {
    const size_t idx = (p - rr.lo) / 4;
    const uintptr_t glo = rr.lo + idx * 4;
    const uintptr_t ghi = std::min<uintptr_t>(glo + 4, end);
    uint8_t mask = 0;
    for (uintptr_t q = p; q < ghi; ++q) mask |= (uint8_t)(1u << (q - glo));
    RaceCell& c = rr.cells[idx];
    // Not checked: two plain writes (threads storing one flag value is common and harmless; a
    // read of the location after them is checked, and so are the values), two atomics.
    const bool ww = kind == kWrite && !c.watomic;
    if (c.wgen >= lg && (c.wmask & mask) && !(kind == kAtomic && c.watomic) && !ww) {
      if (c.wblk != blk) {
        if (!g_race_block_synced) return race_report(rr, p, true, c.wblk, c.wtid, c.watomic ? kAtomic : kWrite, kind);
      } else if (!race_ordered(c.wgen, c.wtid, t)) {
        return race_report(rr, p, false, c.wblk, c.wtid, c.watomic ? kAtomic : kWrite, kind);
      }
    }
    if (kind == kRead) {
      int s = c.rtid[0] == t && c.rgen[0] >= lg && c.rblk[0] == blk ? 0 : 1;
      if (s == 1) {  // keep the latest read of another thread in slot 1
        c.rgen[1] = c.rgen[0], c.rblk[1] = c.rblk[0], c.rtid[1] = c.rtid[0], c.rmask[1] = c.rmask[0];
        c.rmask[0] = 0;
      }
      c.rgen[0] = now, c.rblk[0] = blk, c.rtid[0] = (uint16_t)t, c.rmask[0] |= mask;
    } else {
      for (int s = 0; s < 2; ++s) {
        if (c.rgen[s] < lg || !(c.rmask[s] & mask)) continue;
        if (c.rblk[s] != blk) {
          if (!g_race_block_synced) return race_report(rr, p, true, c.rblk[s], c.rtid[s], kRead, kind);
        } else if (!race_ordered(c.rgen[s], c.rtid[s], t)) {
          return race_report(rr, p, false, c.rblk[s], c.rtid[s], kRead, kind);
        }
      }
      const bool same = c.wgen == now && c.wtid == t && c.wblk == blk;
      c.wmask = same ? (uint8_t)(c.wmask | mask) : mask;
      c.wgen = now, c.wblk = blk, c.wtid = (uint16_t)t, c.watomic = kind == kAtomic;
    }
    p = ghi;
  }
  if (kind == kAtomic) {
    uint8_t& s = g_thread_sync[t];
    s |= 2;
    if (s == 3) g_race_block_synced = true;
  }
}

__attribute__((no_sanitize_thread, always_inline)) inline void race_access(const volatile void* p, size_t n, int kind) {
  const uintptr_t a = (uintptr_t)p;
  if (__builtin_expect(!g_race_active, 1) || a >= g_race_hi || a + n <= g_race_lo || g_hook_busy) return;
  g_hook_busy = true;
  race_access_slow(a, n, kind);
  g_hook_busy = false;
}

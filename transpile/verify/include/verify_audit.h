// verify_audit.h: the verifier's instrumentation of a simulated .cu file
// (transpile/verify/simstage.py compiles the candidate with
// `-include cuda_sim.h -include verify_audit.h`).  Two audits, neither of
// which changes what a correct program computes:
//
// * Stream discipline.  The simulator runs every launch and copy at once, so
//   work left on a stream nobody synchronises gives the right answer here and
//   a wrong (or untimed) one on a GPU.  The CUDA stream and event calls of the
//   candidate are wrapped (macros defined at the end, after cuda_sim.h, so the
//   simulator's own code is untouched) and a pending-work flag is tracked per
//   stream with CUDA's rules: a blocking cudaMemcpy waits for the legacy
//   default stream and the blocking streams, never for a non-blocking one;
//   cudaStreamSynchronize, cudaEventSynchronize, cudaStreamWaitEvent,
//   cudaDeviceSynchronize and cudaFree settle what they settle.  Reported: a
//   blocking copy while a non-blocking stream still has work, work still
//   pending when the entry point returns, and (in a NAME_device call) work on
//   the default stream instead of the stream passed in.
//
// * Inter-block races.  The simulator runs the blocks of a grid one after the
//   other, so `*sum += partial` from every block is right here and loses
//   updates on a GPU.  With splitting on, the device allocations are
//   snapshotted before each block of a multi-block launch and compared after
//   it, and a byte changed by two different blocks is a race unless an atomic
//   touched it.  (The simulator's race detector, cuda_sim_race.h, also finds
//   these, and the reads; this check is independent of it.)
//
// Neither audit uses a macro: cuda_sim.h calls the hooks installed at the end
// of this file (__sim::g_audit_api, __sim::g_audit_launch), so the candidate
// cannot tell that it is audited by `#ifdef cudaMemcpy` (docs/verify.md).
//
// Harness API (extern "C"): __verify_reset, __verify_split, __verify_begin,
// __verify_end, __verify_issues, __verify_stream, __verify_stream_sync,
// __verify_malloc, __verify_free.  Issues are lines "stream: ..." / "race: ...".
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#pragma GCC visibility push(hidden)
namespace __verify {

struct StreamState {
  cudaStream_t handle = nullptr;
  std::string name;
  bool nonblocking = false;
  bool pending = false;
  bool alive = true;
  std::string what;  // the last work submitted while pending
};

inline std::vector<StreamState> g_streams{StreamState{nullptr, "the default stream", false, false, true, ""}};
inline std::map<cudaEvent_t, std::pair<size_t, bool>> g_events;  // event -> (stream index, pending when recorded)
inline std::vector<std::string> g_issues;
inline std::string g_issue_text;
inline bool g_device_entry = false;
inline size_t g_given = 0;  // index of the stream passed to a NAME_device call
inline bool g_split = true;
inline unsigned long long g_max_split_blocks = 4096;
inline size_t g_max_split_bytes = (size_t)64 << 20;
// Bytes snapshotted and compared per call (blocks x device bytes, over all split launches): a
// host loop of n launches (trisolv after passes/reschedule.py: 2n launches of up to 33 blocks at
// n = 1025) would otherwise compare hundreds of GB.  Launches past the budget run unsplit: the
// race check covers the call's first launches (every kernel of a host loop's first iterations).
inline const unsigned long long g_split_budget = 4ull << 30;
inline unsigned long long g_split_left = g_split_budget;
inline std::vector<std::pair<uintptr_t, size_t>> g_atomics;

SIM_RT void issue(const std::string& s) {
  for (const auto& old : g_issues)
    if (old == s) return;
  if (g_issues.size() < 16) g_issues.push_back(s);
}

SIM_RT size_t index_of(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy) return 0;
  for (size_t i = g_streams.size(); i-- > 1;)
    if (g_streams[i].alive && g_streams[i].handle == s) return i;
  StreamState st;  // a stream we did not see created (cudaStreamPerThread, or made before the call)
  st.handle = s;
  st.name = s == cudaStreamPerThread ? "cudaStreamPerThread" : "stream #" + std::to_string(g_streams.size());
  st.nonblocking = s == cudaStreamPerThread;
  g_streams.push_back(st);
  return g_streams.size() - 1;
}

SIM_RT void created(cudaStream_t s, bool nonblocking) {
  for (auto& st : g_streams)
    if (st.handle == s && &st != &g_streams[0]) st.alive = false;  // a reused handle is a new stream
  StreamState st;
  st.handle = s;
  st.name = "stream #" + std::to_string(g_streams.size());
  st.nonblocking = nonblocking;
  g_streams.push_back(st);
}

SIM_RT void work(cudaStream_t s, const std::string& what) {
  size_t i = index_of(s);
  if (g_device_entry && i != g_given && (i == 0 || g_streams[i].handle == cudaStreamPerThread))
    issue("stream: " + what + " runs on " + g_streams[i].name +
          ", not on the stream passed to the _device entry point: timing on that stream does not see it");
  g_streams[i].pending = true;
  g_streams[i].what = what;
}

inline void settle_blocking() {  // what a blocking call on the legacy default stream waits for
  for (auto& st : g_streams)
    if (!st.nonblocking) st.pending = false;
}

inline void settle_all() {
  for (auto& st : g_streams) st.pending = false;
}

inline void blocking_copy(const char* api) {
  for (const auto& st : g_streams)
    if (st.nonblocking && st.pending)
      issue(std::string("stream: ") + api + " on the default stream while " + st.what + " on non-blocking " +
            st.name + " may still be running (no synchronisation between them)");
}

SIM_RT void end_call() {
  for (size_t i = 0; i < g_streams.size(); ++i) {
    const auto& st = g_streams[i];
    if (!st.pending || (g_device_entry && i == g_given)) continue;
    issue("stream: " + st.what + " on " + st.name + " was still pending when the entry point returned " +
          "(nothing synchronised it)");
  }
}

// --- inter-block race detection

struct Region {
  unsigned char* p;
  size_t n;
  unsigned long long id;
  std::vector<unsigned char> snap;
  std::vector<int> owner;
};

inline bool atomic_byte(uintptr_t a) {
  for (const auto& r : g_atomics)
    if (a >= r.first && a < r.first + r.second) return true;
  return false;
}

SIM_RT void note_atomic(const void* p, size_t n) {
  if (!p) return;
  g_atomics.emplace_back((uintptr_t)p, n);
  if (g_atomics.size() > 65536) {  // keep the list short: merge duplicates
    std::sort(g_atomics.begin(), g_atomics.end());
    g_atomics.erase(std::unique(g_atomics.begin(), g_atomics.end()), g_atomics.end());
  }
}

SIM_RT std::string block_name(unsigned long long b, dim3 g) {
  return "(" + std::to_string(b % g.x) + "," + std::to_string(b / g.x % g.y) + "," +
         std::to_string(b / ((unsigned long long)g.x * g.y)) + ")";
}

// The launch being split (its regions snapshotted around each block).
inline std::vector<Region> g_regions;
inline long long g_conflicts = 0;
inline std::string g_first;
inline dim3 g_launch_grid{1, 1, 1};
inline const char* g_launch_name = "";

SIM_RT bool launch_begin(const __sim::LaunchConfig& c) {
  work(c.stream, std::string("kernel ") + c.name);
  const unsigned long long nb = (unsigned long long)c.grid.x * c.grid.y * c.grid.z;
  if (!g_split || nb <= 1 || nb > g_max_split_blocks || __sim::g_sticky != cudaSuccess) return false;
  std::vector<Region> regions;
  size_t total = 0;
  for (auto& kv : __sim::g_allocs)
    if (__sim::is_device_kind(kv.second.kind) && kv.second.size) {
      regions.push_back(Region{reinterpret_cast<unsigned char*>(kv.first), kv.second.size, kv.second.id, {}, {}});
      total += kv.second.size;
    }
  if (total > g_max_split_bytes || (unsigned long long)total * nb > g_split_left) return false;
  g_split_left -= (unsigned long long)total * nb;
  for (auto& r : regions) r.owner.assign(r.n, -1);
  g_regions.swap(regions);
  g_atomics.clear();
  g_conflicts = 0;
  g_first.clear();
  g_launch_grid = c.grid;
  g_launch_name = c.name;
  return true;
}

SIM_RT void block_before(unsigned long long) {
  for (auto& r : g_regions) r.snap.assign(r.p, r.p + r.n);
}

SIM_RT void block_after(unsigned long long b) {
  for (auto& r : g_regions) {
    for (size_t i = 0; i < r.n; ++i) {
      if (r.p[i] == r.snap[i]) continue;
      int prev = r.owner[i];
      r.owner[i] = (int)b;
      if (prev < 0 || prev == (int)b || atomic_byte((uintptr_t)(r.p + i))) continue;
      if (!g_conflicts++)
        g_first = "race: blocks " + block_name((unsigned long long)prev, g_launch_grid) + " and " +
                  block_name(b, g_launch_grid) + " of kernel " + g_launch_name + " both write byte " +
                  std::to_string(i) + " of device allocation #" + std::to_string(r.id) + " (" +
                  std::to_string(r.n) + " bytes) without an atomic";
    }
  }
}

SIM_RT void launch_end(const __sim::LaunchConfig&) {
  if (g_conflicts)
    issue(g_first + " (" + std::to_string(g_conflicts) + " byte(s) in all): an inter-block race, updates are lost on a GPU");
  g_regions.clear();
  g_conflicts = 0;
}

}  // namespace __verify
#pragma GCC visibility pop

inline cudaError_t __verify_cudaStreamCreate(cudaStream_t* s) {
  cudaError_t e = __sim_impl_cudaStreamCreate(s);
  if (e == cudaSuccess) __verify::created(*s, false);
  return e;
}
inline cudaError_t __verify_cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  cudaError_t e = __sim_impl_cudaStreamCreateWithFlags(s, flags);
  if (e == cudaSuccess) __verify::created(*s, (flags & cudaStreamNonBlocking) != 0);
  return e;
}
inline cudaError_t __verify_cudaStreamCreateWithPriority(cudaStream_t* s, unsigned flags, int prio) {
  cudaError_t e = __sim_impl_cudaStreamCreateWithPriority(s, flags, prio);
  if (e == cudaSuccess) __verify::created(*s, (flags & cudaStreamNonBlocking) != 0);
  return e;
}
inline cudaError_t __verify_cudaStreamDestroy(cudaStream_t s) {
  // Work on a destroyed stream still runs; its state stays (pending) until settled.
  size_t i = __verify::index_of(s);
  cudaError_t e = __sim_impl_cudaStreamDestroy(s);
  if (i) __verify::g_streams[i].handle = nullptr, __verify::g_streams[i].alive = false;
  return e;
}
SIM_RT cudaError_t __verify_cudaStreamSynchronize(cudaStream_t s) {
  size_t i = __verify::index_of(s);
  cudaError_t e = __sim_impl_cudaStreamSynchronize(s);
  if (i == 0) __verify::settle_blocking();
  else __verify::g_streams[i].pending = false;
  return e;
}
inline cudaError_t __verify_cudaStreamQuery(cudaStream_t s) {
  cudaError_t e = __sim_impl_cudaStreamQuery(s);
  if (e == cudaSuccess) __verify_cudaStreamSynchronize(s);
  return e;
}
inline cudaError_t __verify_cudaDeviceSynchronize() {
  __verify::settle_all();
  return __sim_impl_cudaDeviceSynchronize();
}
inline cudaError_t __verify_cudaThreadSynchronize() { return __verify_cudaDeviceSynchronize(); }
SIM_RT cudaError_t __verify_cudaEventRecord(cudaEvent_t ev, cudaStream_t s = nullptr) {
  size_t i = __verify::index_of(s);
  __verify::g_events[ev] = {i, __verify::g_streams[i].pending};
  return __sim_impl_cudaEventRecord(ev, s);
}
inline cudaError_t __verify_cudaEventSynchronize(cudaEvent_t ev) {
  cudaError_t e = __sim_impl_cudaEventSynchronize(ev);
  auto it = __verify::g_events.find(ev);
  if (e == cudaSuccess && it != __verify::g_events.end() && it->second.second) {
    if (it->second.first == 0) __verify::settle_blocking();
    else __verify::g_streams[it->second.first].pending = false;
  }
  return e;
}
inline cudaError_t __verify_cudaEventQuery(cudaEvent_t ev) {
  cudaError_t e = __sim_impl_cudaEventQuery(ev);
  if (e == cudaSuccess) __verify_cudaEventSynchronize(ev);
  return e;
}
SIM_RT cudaError_t __verify_cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t ev, unsigned flags = 0) {
  auto it = __verify::g_events.find(ev);
  if (it != __verify::g_events.end() && it->second.second) {  // the work recorded is now ordered before s's
    size_t i = __verify::index_of(s);  // first: it may grow g_streams
    auto& src = __verify::g_streams[it->second.first];
    if (src.pending && i != it->second.first) {
      __verify::g_streams[i].pending = true;
      __verify::g_streams[i].what = src.what;
      src.pending = false;
    }
  }
  return __sim_impl_cudaStreamWaitEvent(s, ev, flags);
}
inline cudaError_t __verify_cudaMemcpy(void* dst, const void* src, size_t n, cudaMemcpyKind kind) {
  __verify::blocking_copy("cudaMemcpy");
  cudaError_t e = __sim_impl_cudaMemcpy(dst, src, n, kind);
  __verify::settle_blocking();
  return e;
}
inline cudaError_t __verify_cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                            cudaStream_t s = nullptr) {
  __verify::work(s, "cudaMemcpyAsync");
  return __sim_impl_cudaMemcpyAsync(dst, src, n, kind, s);
}
inline cudaError_t __verify_cudaFree(void* p) {
  __verify::settle_all();  // cudaFree synchronises the device
  return __sim_impl_cudaFree(p);
}

#ifndef CUDA_SIM_RUNTIME_EXTERN  // defined once, in the runtime object (see SIM_RT in cuda_sim.h)
extern "C" {
__attribute__((visibility("default"))) void __verify_reset(void) {
  __verify::g_streams.resize(1);
  __verify::g_streams[0].pending = false;
  __verify::g_events.clear();
  __verify::g_issues.clear();
  __verify::g_device_entry = false;
  __verify::g_given = 0;
  __verify::g_split_left = __verify::g_split_budget;
}
__attribute__((visibility("default"))) void __verify_split(int on) { __verify::g_split = on != 0; }
// A call of the drop-in (device_entry 0) or of NAME_device on `stream` (1) begins.
__attribute__((visibility("default"))) void __verify_begin(int device_entry, void* stream) {
  __verify::g_device_entry = device_entry != 0;
  __verify::g_given = __verify::index_of(static_cast<cudaStream_t>(stream));
}
__attribute__((visibility("default"))) void __verify_end(void) {
  __verify::end_call();
  __verify::g_device_entry = false;
}
__attribute__((visibility("default"))) const char* __verify_issues(void) {
  __verify::g_issue_text.clear();
  for (const auto& s : __verify::g_issues) __verify::g_issue_text += s + "\n";
  return __verify::g_issue_text.c_str();
}
// A non-blocking stream for the harness's NAME_device calls.
__attribute__((visibility("default"))) void* __verify_stream(void) {
  cudaStream_t s = nullptr;
  if (__sim_impl_cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return nullptr;
  __verify::created(s, true);
  return s;
}
__attribute__((visibility("default"))) int __verify_stream_sync(void* s) {
  return (int)__verify_cudaStreamSynchronize(static_cast<cudaStream_t>(s));
}
__attribute__((visibility("default"))) void* __verify_malloc(unsigned long long n) {
  void* p = nullptr;
  return cudaMalloc(&p, (size_t)(n ? n : 1)) == cudaSuccess ? p : nullptr;
}
__attribute__((visibility("default"))) int __verify_free(void* p) { return (int)__sim_impl_cudaFree(p); }
}  // extern "C"
#endif  // CUDA_SIM_RUNTIME_EXTERN

// The hooks cuda_sim.h calls (no macro: the candidate's code is compiled as it was written).
namespace __verify {
SIM_RT bool install() {
  __sim::g_audit_api.cudaStreamCreate = __verify_cudaStreamCreate;
  __sim::g_audit_api.cudaStreamCreateWithFlags = __verify_cudaStreamCreateWithFlags;
  __sim::g_audit_api.cudaStreamCreateWithPriority = __verify_cudaStreamCreateWithPriority;
  __sim::g_audit_api.cudaStreamDestroy = __verify_cudaStreamDestroy;
  __sim::g_audit_api.cudaStreamSynchronize = __verify_cudaStreamSynchronize;
  __sim::g_audit_api.cudaStreamQuery = __verify_cudaStreamQuery;
  __sim::g_audit_api.cudaStreamWaitEvent = __verify_cudaStreamWaitEvent;
  __sim::g_audit_api.cudaDeviceSynchronize = __verify_cudaDeviceSynchronize;
  __sim::g_audit_api.cudaThreadSynchronize = __verify_cudaThreadSynchronize;
  __sim::g_audit_api.cudaEventRecord = __verify_cudaEventRecord;
  __sim::g_audit_api.cudaEventSynchronize = __verify_cudaEventSynchronize;
  __sim::g_audit_api.cudaEventQuery = __verify_cudaEventQuery;
  __sim::g_audit_api.cudaMemcpy = __verify_cudaMemcpy;
  __sim::g_audit_api.cudaMemcpyAsync = __verify_cudaMemcpyAsync;
  __sim::g_audit_api.cudaFree = __verify_cudaFree;
  __sim::g_audit_launch.launch_begin = launch_begin;
  __sim::g_audit_launch.block_before = block_before;
  __sim::g_audit_launch.block_after = block_after;
  __sim::g_audit_launch.launch_end = launch_end;
  __sim::g_audit_launch.atomic = note_atomic;
  return true;
}
#ifndef CUDA_SIM_RUNTIME_EXTERN
[[maybe_unused]] static const bool g_installed = install();
#endif
}  // namespace __verify

"""Benchmark the drop-in host functions against the transfer floor (issue 10).

    python bench/dropin.py --generate DIR [--kernels gemm,atax]  # here: K.cu, K.harness.cu, probe.cu, manifest
    python bench/dropin.py --dry-run [--cu-dir DIR]              # here: generate + nvcc every harness, no GPU
    python3 bench/dropin.py --cu-dir DIR [--out OUT]             # on the GPU machine (python3, numpy, nvcc)

``--kernels``, ``--sizes``, ``--modes``, ``--reps`` and ``--budget`` split a long run
into several commands; ``--work DIR`` keeps the nvcc builds (cached by content) for
the next one; ``--define NAME=VALUE`` rebuilds with other drop-in tunables.

Split like bench/gpu.py: generation needs the transpiler (pycparser, lark,
islpy) and runs here; the GPU side needs only python3 and nvcc.  What the GPU
side does:

* ``probe.cu`` measures, in the same run, host-device bandwidth each way from
  pageable (``malloc``) and pinned (``cudaMallocHost``) memory at several
  sizes, ``cudaHostRegister`` + ``cudaHostUnregister``, a host ``memcpy``
  (the staging copy), and ``cudaMalloc`` + ``cudaFree`` versus an allocation
  from a warm stream-ordered pool;
* for each kernel and size (PolyBench LARGE and EXTRALARGE, bench/roofline.py),
  ``K.harness.cu`` linked with ``K.cu`` calls the drop-in ``NAME(...)`` on
  ``malloc``'d host arrays: the first call (pool, staging buffers, stream
  creation, CUDA context warm-up included) timed apart, then repeated calls
  (median) for each copy path (``auto``; and ``staged`` and ``register``,
  forced with ``TRANSPILE_DROPIN_COPY``), timed with ``std::chrono``; then
  ``NAME_device`` alone on device arrays, timed with events (the kernel time);
* the floor is the bytes that must cross (copy-in over each array's bounding
  box unless it is never read and fully written; copy-out over the bounding
  box of the writes: :mod:`passes.footprint`, computed here into the
  manifest) over the measured pinned bandwidth each way, plus the kernel
  time; the ratio is the median call over the floor (acceptance: <= 1.5 at
  EXTRALARGE).

Output (``--out``, default ``$OUT`` if set, else bench/results): ``dropin.md``
(probe, table) and ``dropin.jsonl`` (raw records).  Inputs are a fixed pattern,
not the verifier's: this measures time; correctness is the verifier's job.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import roofline as R  # noqa: E402

KERNELS = ROOT / "tests" / "kernels"
LABELS = {"LARGE": 1, "EXTRALARGE": 0}
"""Size label -> index into bench/roofline.py's (EXTRALARGE, LARGE, MEDIUM) sizes."""
MODES = ("auto", "staged", "register", "serial")
"""Copy paths timed by default; ``pinned`` (the caller's arrays page-locked for the mode) on request.
``serial``: ``auto`` with every copy-in before the kernels and every copy-out after them
(``TRANSPILE_DROPIN_PHASES=0``), the A/B of the copies placed between phases; ``pinned-serial``
the same on pinned arrays.  ``KEY=VALUE`` for a key of :data:`ENV_MODES`: ``auto`` with that measurement
variable of the drop-in set (``stores=none|in|out|both``, ``threads=N`` (build with ``--define
TRANSPILE_STAGE_THREADS=16`` to try more than 8), ``share=0|1`` (whole chunks a copier, or every
copier a piece of each chunk); several joined by ``+``: ``share=1+threads=16``); ``trace``: ``auto`` with each call's steps timed
(``TRANSPILE_DROPIN_TRACE=1``).  A mode named several times pools its samples, so ``--modes
stores=none,auto,stores=none,auto`` is an interleaved A/B in one process."""
ENV_MODES = {"stores": "TRANSPILE_DROPIN_STREAM_STORES", "threads": "TRANSPILE_DROPIN_THREADS",
             "caller": "TRANSPILE_DROPIN_CALLER_COPIES", "share": "TRANSPILE_DROPIN_SHARE"}
"""Mode keys -> the drop-in's environment variables they set (docs/dropin.md)."""
TABLE_MODES = ("auto", "staged", "register", "serial", "pinned", "pinned-serial")
"""Modes with a column of the main table; any other (``KEY=VALUE``, ``trace``) gets a row of its own."""


def mode_known(mode: str) -> bool:
    """Whether the harness understands ``mode`` (a table mode, ``trace``, or ``+``-joined KEY=VALUE)."""
    if mode in TABLE_MODES or mode == "trace":
        return True
    settings = [part.partition("=") for part in mode.split("+")]
    return all(sep and key in ENV_MODES and value for key, sep, value in settings)


NVCC_FLAGS = ("-arch=sm_90", "-O3", "-std=c++17")
ACCEPT = 1.5
ELEM_BYTES = {"double": 8, "int": 4, "char": 1}


def stem(kernel: str) -> str:
    return kernel.replace("-", "_")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)



def sizes_of(kernel: str) -> dict[str, dict[str, int]]:
    return {label: dict(R.SIZES[kernel][i]) for label, i in LABELS.items()}


# ---------------------------------------------------------------------------
# Generation (here: needs the transpiler)


_PARAM = re.compile(r"^(?:const\s+)?(?P<type>[A-Za-z_][A-Za-z_ ]*?)\s*(?P<ptr>\*?)\s*(?P<name>\w+)$")


def c_params(cu: str, function: str) -> list[dict[str, Any]]:
    """The parameters of ``extern "C" void function(...)`` in ``cu``: C type, pointer or not, name."""
    m = re.search(rf'extern "C" void {re.escape(function)}\(([^)]*)\)', cu)
    assert m, f"no drop-in {function} in the generated file"
    out = []
    for text in m.group(1).split(","):
        pm = _PARAM.match(text.strip())
        assert pm, f"cannot read parameter {text!r} of {function}"
        out.append({"type": pm["type"], "pointer": bool(pm["ptr"]), "name": pm["name"]})
    return out


def footprint_bytes(kernel: str, lowered: Any) -> dict[str, dict[str, int]]:
    """Per size label: bytes that must cross each way (footprint analysis) and the arrays' total."""
    from passes import footprint
    from tests.polybench import SPECS

    spec = SPECS[kernel]
    k = lowered.kernels[0]
    fps = footprint.analyze(k)
    intents = {p.name: p.intent for p in k.params}
    out: dict[str, dict[str, int]] = {}
    for label, sizes in sizes_of(kernel).items():
        h2d = d2h = total = 0
        for p in spec.arrays:
            assert p.elem is not None
            dims = p.shape(sizes)
            elem = ELEM_BYTES[p.elem]
            n = 1
            for d in dims:
                n *= d
            total += n * elem
            fp = fps[p.name]
            if fp.copy_in:
                lo, hi = fp.span(dims, sizes)
                h2d += (hi - lo) * elem
            if intents[p.name] != "in" and fp.written:
                lo, hi = fp.span(dims, sizes, writes=True)
                d2h += (hi - lo) * elem
        out[label] = {"h2d": h2d, "d2h": d2h, "arrays": total}
    return out


def harness(kernel: str, function: str, params: list[dict[str, Any]], device: str) -> str:
    """The C++ timing harness of one kernel (linked with its generated .cu)."""
    from tests.polybench import SPECS

    spec = SPECS[kernel]
    kinds = {p.name: p for p in spec.params}
    sizes = sizes_of(kernel)
    proto = ", ".join(f"{p['type']} {'*' if p['pointer'] else ''}{p['name']}" for p in params)
    lines = [
        f"// Generated by bench/dropin.py: times {function} (drop-in) and {function}_device.",
        "#include <cuda_runtime.h>",
        "#include <algorithm>", "#include <chrono>", "#include <cstdio>", "#include <cstdlib>",
        "#include <cstring>", "#include <string>", "#include <vector>",
        "",
        f'extern "C" void {function}({proto});',
        f'extern "C" cudaError_t {function}_device({device});',
        f'extern "C" void {function}_release(void);',
        "",
        "static double now_ms()",
        "{",
        "  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();",
        "}",
        "",
        "static void check(cudaError_t e, const char *what)",
        "{",
        "  if (e != cudaSuccess) {",
        '    fprintf(stderr, "harness: %s: %s\\n", what, cudaGetErrorString(e));',
        "    exit(1);",
        "  }",
        "}",
        "",
        "static void print_list(const char *key, const std::vector<double> &v)",
        "{",
        '  printf("\\"%s\\": [", key);',
        "  for (size_t i = 0; i < v.size(); ++i) {",
        '    printf("%s%.6f", i ? ", " : "", v[i]);',
        "  }",
        '  printf("]");',
        "}",
        "",
        "// The value of KEY=VALUE in a mode of '+'-joined settings (share=1+threads=16), or NULL.",
        "static const char *mode_setting(const std::string &mode, const std::string &key, std::string &value)",
        "{",
        "  size_t at = 0;",
        "  while (at <= mode.size()) {",
        "    size_t end = mode.find('+', at);",
        "    if (end == std::string::npos) {",
        "      end = mode.size();",
        "    }",
        "    if (mode.compare(at, key.size() + 1, key + \"=\") == 0) {",
        "      value = mode.substr(at + key.size() + 1, end - at - key.size() - 1);",
        "      return value.c_str();",
        "    }",
        "    at = end + 1;",
        "  }",
        "  return NULL;",
        "}",
        "",
        "// argv: LARGE|EXTRALARGE, repeated calls per mode, budget seconds per mode, modes (comma-separated)",
        "int main(int argc, char **argv)",
        "{",
        "  if (argc < 5) {",
        '    fprintf(stderr, "usage: %s LARGE|EXTRALARGE REPS BUDGET_S MODES\\n", argv[0]);',
        "    return 2;",
        "  }",
        "  const bool xl = strcmp(argv[1], \"EXTRALARGE\") == 0;",
        "  const int reps = atoi(argv[2]);",
        "  const double budget = atof(argv[3]) * 1000.0;",
        "  const std::string modes = argv[4];",
    ]
    for p in params:
        name = p["name"]
        spec_p = kinds.get(name)
        if p["pointer"]:
            continue
        if spec_p is not None and spec_p.kind == "size":
            lines.append(f"  const {p['type']} {name} = xl ? {sizes['EXTRALARGE'][name]} : {sizes['LARGE'][name]};")
        else:
            value = "1.5" if "double" in p["type"] or "float" in p["type"] else "3"
            lines.append(f"  const {p['type']} {name} = {value};")
    arrays = [p for p in params if p["pointer"]]
    for p in arrays:
        spec_p = kinds[p["name"]]
        count = " * ".join(f"(size_t){d}" for d in spec_p.dims) or "1"
        t, name = p["type"], p["name"]
        fill = "1.0 + (double)(i % 17) * 0.01" if "double" in t or "float" in t else "(i % 13) + 1"
        if "char" in t:
            fill = "(i % 4)"
        lines += [
            f"  const size_t {name}_n = {count};",
            f"  {t} *{name} = ({t} *)malloc({name}_n * sizeof({t}) + 1);",
            f"  for (size_t i = 0; i < {name}_n; ++i) {{",
            f"    {name}[i] = ({t})({fill});",
            "  }",
        ]
    args = ", ".join(p["name"] for p in params)
    # One JSON line per phase, flushed: a crash in a later phase (a copy path) keeps the earlier ones.
    lines += [
        "  double t0 = now_ms();",
        '  check(cudaFree(0), "CUDA context");  // context creation is timed apart from the first call',
        "  const double init = now_ms() - t0;",
        "  t0 = now_ms();",
        f"  {function}({args});",
        "  const double first = now_ms() - t0;",
        '  printf("{\\"init_ms\\": %.6f, \\"first_ms\\": %.6f}\\n", init, first);',
        "  fflush(stdout);",
        "  {",
        "    // The kernels alone: NAME_device on device arrays, timed with events.",
        "    cudaStream_t stream;",
        '    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");',
    ]
    dev_args = []
    # NAME_device's own parameter types (it may spell a C 'char' array 'const signed char *'): casts.
    dev_types = [re.sub(r"\w+$", "", t.strip()).strip() for t in device.split(",")][:-1]
    for i, p in enumerate(params):
        if p["pointer"]:
            t, name = p["type"], p["name"]
            lines += [
                f"    {t} *{name}_d = NULL;",
                f'    check(cudaMalloc((void **)&{name}_d, {name}_n * sizeof({t}) + 1), "cudaMalloc");',
                f'    check(cudaMemcpy({name}_d, {name}, {name}_n * sizeof({t}), cudaMemcpyHostToDevice), "copy");',
            ]
            dev_args.append(f"({dev_types[i]}){name}_d" if len(dev_types) == len(params) else f"{name}_d")
        else:
            dev_args.append(p["name"])
    lines += [
        "    cudaEvent_t e0, e1;",
        '    check(cudaEventCreate(&e0), "event");',
        '    check(cudaEventCreate(&e1), "event");',
        f'    check({function}_device({", ".join(dev_args)}, stream), "{function}_device");  // its first call apart',
        '    check(cudaStreamSynchronize(stream), "kernel execution");',
        "    std::vector<double> kernel;",
        "    double spent = 0;",
        "    while ((int)kernel.size() < std::max(1, reps / 2) && (kernel.size() < 1 || spent < budget)) {",
        '      check(cudaEventRecord(e0, stream), "record");',
        f'      check({function}_device({", ".join(dev_args)}, stream), "{function}_device");',
        '      check(cudaEventRecord(e1, stream), "record");',
        '      check(cudaEventSynchronize(e1), "kernel execution");',
        "      float ms = 0;",
        '      check(cudaEventElapsedTime(&ms, e0, e1), "elapsed");',
        "      kernel.push_back(ms);",
        "      spent += ms;",
        "    }",
        '    printf("{");',
        '    print_list("kernel_ms", kernel);',
        '    printf("}\\n");',
        "    fflush(stdout);",
    ]
    lines += [f"    check(cudaFree({p['name']}_d), \"cudaFree\");" for p in params if p["pointer"]]
    lines += [
        '    check(cudaStreamDestroy(stream), "stream");',
        "  }",
        "  size_t start = 0;",
        "  while (start <= modes.size()) {",
        "    size_t end = modes.find(',', start);",
        "    if (end == std::string::npos) {",
        "      end = modes.size();",
        "    }",
        "    const std::string mode = modes.substr(start, end - start);",
        "    start = end + 1;",
        "    if (mode.empty()) {",
        "      continue;",
        "    }",
        "    // pinned: the caller's arrays are page-locked (cudaHostRegister) for the mode, copied directly.",
        "    // serial: no copies between the kernel's phases (TRANSPILE_DROPIN_PHASES=0).",
        "    const bool pinned = mode == \"pinned\" || mode == \"pinned-serial\";",
        "    const bool serial = mode == \"serial\" || mode == \"pinned-serial\";",
        "    // KEY=VALUE (ENV_MODES) or trace: auto with one of the drop-in's measurement variables set.",
        "    bool knob = mode == \"trace\";",
        '    if (knob) setenv("TRANSPILE_DROPIN_TRACE", "1", 1); else unsetenv("TRANSPILE_DROPIN_TRACE");',
        "    std::string value;",
        *[f'    if (mode_setting(mode, "{key}", value) != NULL) {{ setenv("{var}", value.c_str(), 1); knob = true; }} '
          f'else {{ unsetenv("{var}"); }}' for key, var in ENV_MODES.items()],
        "    if (mode == \"auto\" || pinned || serial || knob) {",
        '      unsetenv("TRANSPILE_DROPIN_COPY");',
        "    } else {",
        '      setenv("TRANSPILE_DROPIN_COPY", mode.c_str(), 1);',
        "    }",
        "    if (serial) {",
        '      setenv("TRANSPILE_DROPIN_PHASES", "0", 1);',
        "    } else {",
        '      unsetenv("TRANSPILE_DROPIN_PHASES");',
        "    }",
        "    if (pinned) {",
        *[f'      check(cudaHostRegister({p["name"]}, {p["name"]}_n * sizeof(*{p["name"]}), cudaHostRegisterDefault), '
          f'"cudaHostRegister");' for p in arrays],
        "    }",
        "    std::vector<double> times;",
        "    double spent = 0;",
        "    while ((int)times.size() < reps && (times.size() < 2 || spent < budget)) {",
        "      t0 = now_ms();",
        f"      {function}({args});",
        "      times.push_back(now_ms() - t0);",
        "      spent += times.back();",
        "    }",
        "    if (pinned) {",
        *[f'      check(cudaHostUnregister({p["name"]}), "cudaHostUnregister");' for p in arrays],
        "    }",
        '    printf("{\\"mode\\": \\"%s\\", ", mode.c_str());',
        '    print_list("times", times);',
        '    printf("}\\n");',
        "    fflush(stdout);",
        "  }",
        '  unsetenv("TRANSPILE_DROPIN_COPY");',
        '  unsetenv("TRANSPILE_DROPIN_PHASES");',
        '  unsetenv("TRANSPILE_DROPIN_TRACE");',
        *[f'  unsetenv("{var}");' for var in ENV_MODES.values()],
        f"  {function}_release();",
        "  return 0;",
        "}",
    ]
    return "\n".join(lines) + "\n"


PROBE = r"""// Generated by bench/dropin.py: host-device bandwidths, registration and allocation costs.
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

static double now_ms()
{
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static void check(cudaError_t e, const char *what)
{
  if (e != cudaSuccess) {
    fprintf(stderr, "probe: %s: %s\n", what, cudaGetErrorString(e));
    exit(1);
  }
}

template <class F>
static double median_ms(F f, int reps)
{
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double t0 = now_ms();
    f();
    t.push_back(now_ms() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

__global__ void probe_touch(unsigned char *p, size_t n)
{
  const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    p[i] += 1;
  }
}

// What any CUDA program's first call pays once the context exists, whoever wrote it: the first device
// allocation, the first pageable copy each way, the first launch (its module loaded) and the sync, all
// on 1 MiB.  Timed once first (setup_first_ms) and then as the median of repeats (setup_warm_ms): the
// difference is the one-time setup a first drop-in call cannot avoid (setup_ms).
static double first_call_sequence(unsigned char *host, size_t n)
{
  const double t0 = now_ms();
  unsigned char *dev = NULL;
  check(cudaMalloc((void **)&dev, n), "cudaMalloc");
  check(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice), "h2d");
  probe_touch<<<(unsigned)((n + 255) / 256), 256>>>(dev, n);
  check(cudaGetLastError(), "launch");
  check(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost), "d2h");
  check(cudaDeviceSynchronize(), "sync");
  check(cudaFree(dev), "cudaFree");
  return now_ms() - t0;
}

// `probe first IN OUT`: a minimal program's first call moving the same bytes, in a fresh process after
// the context: one cudaMalloc, a pageable cudaMemcpy of IN bytes in (from touched memory, as a
// caller's initialised arrays), one launch, a pageable cudaMemcpy of OUT bytes out (into touched
// memory), cudaFree.  What any first call pays to move those bytes from and to pageable memory
// (the driver stages them), the setup included; bench/dropin.py adds the kernel time.
static int minimal_first(size_t in, size_t out)
{
  check(cudaFree(0), "init");
  const size_t n = std::max(std::max(in, out), (size_t)1);
  unsigned char *src = (unsigned char *)malloc(n), *dst = (unsigned char *)malloc(n);
  memset(src, 1, n);
  memset(dst, 2, n);
  const double t0 = now_ms();
  unsigned char *dev = NULL;
  check(cudaMalloc((void **)&dev, n), "cudaMalloc");
  if (in > 0) {
    check(cudaMemcpy(dev, src, in, cudaMemcpyHostToDevice), "h2d");
  }
  probe_touch<<<1, 256>>>(dev, std::min(n, (size_t)256));
  check(cudaGetLastError(), "launch");
  if (out > 0) {
    check(cudaMemcpy(dst, dev, out, cudaMemcpyDeviceToHost), "d2h");
  }
  check(cudaDeviceSynchronize(), "sync");
  check(cudaFree(dev), "cudaFree");
  const double t = now_ms() - t0;
  printf("{\"minimal_first_ms\": %.4f, \"in\": %zu, \"out\": %zu}\n", t, in, out);
  return 0;
}

int main(int argc, char **argv)
{
  if (argc == 4 && strcmp(argv[1], "first") == 0) {
    return minimal_first((size_t)strtoull(argv[2], NULL, 10), (size_t)strtoull(argv[3], NULL, 10));
  }
  check(cudaFree(0), "init");
  {
    const size_t n = (size_t)1 << 20;
    unsigned char *host = (unsigned char *)malloc(n);
    memset(host, 1, n);
    const double once = first_call_sequence(host, n);
    const double warm = median_ms([&] { first_call_sequence(host, n); }, 11);
    printf("{\"setup_first_ms\": %.4f, \"setup_warm_ms\": %.4f, \"setup_ms\": %.4f, ", once, warm,
           once > warm ? once - warm : 0.0);
    free(host);
  }
  const size_t sizes[] = {(size_t)4 << 20, (size_t)64 << 20, (size_t)512 << 20};
  printf("\"sizes\": [");
  bool first = true;
  for (size_t n : sizes) {
    unsigned char *pageable = (unsigned char *)malloc(n), *pageable2 = (unsigned char *)malloc(n);
    memset(pageable, 1, n);
    memset(pageable2, 2, n);
    unsigned char *pinned = NULL, *dev = NULL;
    check(cudaMallocHost((void **)&pinned, n), "cudaMallocHost");
    memset(pinned, 3, n);
    check(cudaMalloc((void **)&dev, n), "cudaMalloc");
    const int reps = n > ((size_t)64 << 20) ? 5 : 11;
    const double h2d_pageable = median_ms([&] { check(cudaMemcpy(dev, pageable, n, cudaMemcpyHostToDevice), "h2d"); }, reps);
    const double d2h_pageable = median_ms([&] { check(cudaMemcpy(pageable, dev, n, cudaMemcpyDeviceToHost), "d2h"); }, reps);
    const double h2d_pinned = median_ms([&] { check(cudaMemcpy(dev, pinned, n, cudaMemcpyHostToDevice), "h2d"); }, reps);
    const double d2h_pinned = median_ms([&] { check(cudaMemcpy(pinned, dev, n, cudaMemcpyDeviceToHost), "d2h"); }, reps);
    const double reg = median_ms([&] {
      check(cudaHostRegister(pageable, n, cudaHostRegisterDefault), "cudaHostRegister");
      check(cudaHostUnregister(pageable), "cudaHostUnregister");
    }, reps);
    const double h2d_registered = median_ms([&] {
      check(cudaHostRegister(pageable, n, cudaHostRegisterDefault), "cudaHostRegister");
      check(cudaMemcpy(dev, pageable, n, cudaMemcpyHostToDevice), "h2d");
      check(cudaHostUnregister(pageable), "cudaHostUnregister");
    }, reps);
    const double host_copy = median_ms([&] { memcpy(pageable2, pageable, n); }, reps);
    const double to_pinned = median_ms([&] { memcpy(pinned, pageable, n); }, reps);
    const double malloc_free = median_ms([&] {
      void *p = NULL;
      check(cudaMalloc(&p, n), "cudaMalloc");
      check(cudaFree(p), "cudaFree");
    }, reps);
    cudaMemPool_t pool;
    check(cudaDeviceGetDefaultMemPool(&pool, 0), "pool");
    unsigned long long keep = ~0ull;
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep), "pool attr");
    const double pool_alloc = median_ms([&] {
      void *p = NULL;
      check(cudaMallocAsync(&p, n, 0), "cudaMallocAsync");
      check(cudaFreeAsync(p, 0), "cudaFreeAsync");
      check(cudaStreamSynchronize(0), "sync");
    }, reps);
    const double gb = (double)n / 1e9;
    printf("%s{\"bytes\": %zu, \"h2d_pageable_GBps\": %.3f, \"d2h_pageable_GBps\": %.3f, \"h2d_pinned_GBps\": %.3f, "
           "\"d2h_pinned_GBps\": %.3f, \"register_unregister_ms\": %.4f, \"h2d_registered_GBps\": %.3f, "
           "\"host_memcpy_GBps\": %.3f, \"memcpy_to_pinned_GBps\": %.3f, \"cudaMalloc_free_ms\": %.4f, "
           "\"pool_alloc_free_ms\": %.4f}",
           first ? "" : ", ", n, gb / (h2d_pageable / 1e3), gb / (d2h_pageable / 1e3), gb / (h2d_pinned / 1e3),
           gb / (d2h_pinned / 1e3), reg, gb / (h2d_registered / 1e3), gb / (host_copy / 1e3), gb / (to_pinned / 1e3),
           malloc_free, pool_alloc);
    first = false;
    check(cudaFree(dev), "cudaFree");
    check(cudaFreeHost(pinned), "cudaFreeHost");
    free(pageable);
    free(pageable2);
  }
  printf("]");
  // Host copies by T threads at once, each a contiguous slice: pageable to pinned (the staging
  // copy to the device) and pinned to pageable (from the device); what bounds the staging ring.
  {
    const size_t n = (size_t)512 << 20;
    unsigned char *pageable = (unsigned char *)malloc(n), *pinned = NULL;
    memset(pageable, 1, n);
    check(cudaMallocHost((void **)&pinned, n), "cudaMallocHost");
    memset(pinned, 3, n);
    printf(", \"threads\": [");
    const int counts[] = {1, 2, 4, 6, 8, 12, 16};
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); ++c) {
      const int t = counts[c];
      auto run = [&](unsigned char *dst, const unsigned char *src) {
        std::vector<std::thread> pool;
        const size_t each = (n / t + 4095) / 4096 * 4096;
        for (int i = 0; i < t; ++i) {
          const size_t off = std::min(n, each * i), len = std::min(n, off + each) - off;
          pool.emplace_back([=] { memcpy(dst + off, src + off, len); });
        }
        for (auto &th : pool) {
          th.join();
        }
      };
      const double to = median_ms([&] { run(pinned, pageable); }, 5);
      const double from = median_ms([&] { run(pageable, pinned); }, 5);
      printf("%s{\"threads\": %d, \"to_pinned_GBps\": %.3f, \"from_pinned_GBps\": %.3f}", c ? ", " : "", t,
             (double)n / 1e9 / (to / 1e3), (double)n / 1e9 / (from / 1e3));
    }
    printf("], \"hardware_threads\": %u", std::thread::hardware_concurrency());
    check(cudaFreeHost(pinned), "cudaFreeHost");
    free(pageable);
  }
  printf("}\n");
  return 0;
}
"""


def generate(kernels: list[str], out: Path) -> dict[str, Any]:
    """Write ``K.cu``, ``K.harness.cu``, ``probe.cu`` and ``manifest.json`` to ``out``."""
    from tests.polybench import SPECS
    from transpile import cuda, frontend, pipeline

    out.mkdir(parents=True, exist_ok=True)
    (out / "probe.cu").write_text(PROBE)
    old = out / "manifest.json"
    manifest: dict[str, Any] = json.loads(old.read_text()) if old.exists() else {"kernels": {}}
    for k in kernels:
        t0 = time.monotonic()
        spec = SPECS[k]
        src = KERNELS / f"{stem(k)}.c"
        try:
            module = frontend.load(src)
            lowered = pipeline.lower(module)
            text = cuda.emit(lowered, source=src.name)
            function = lowered.kernels[0].name
            params = c_params(text, function)
            dm = re.search(rf'extern "C" cudaError_t {re.escape(function)}_device\(([^)]*)\)', text)
            assert dm, f"no {function}_device"
            (out / f"{stem(k)}.cu").write_text(text)
            (out / f"{stem(k)}.harness.cu").write_text(harness(k, function, params, dm.group(1)))
            manifest["kernels"][k] = {
                "function": function, "status": "ok", "c_params": params, "device_params": dm.group(1),
                "sizes": sizes_of(k),
                "bytes": footprint_bytes(k, lowered), "spec_function": spec.function,
            }
        except Exception as e:  # reported in the manifest and by the caller
            manifest["kernels"][k] = {"status": f"{type(e).__name__}: {e}"[:400]}
        log(f"generated {k} ({time.monotonic() - t0:.1f} s): {manifest['kernels'][k]['status']}")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


# ---------------------------------------------------------------------------
# Building and running (the GPU machine; --dry-run builds here)


def nvcc_exe() -> str:
    from transpile.toolchain import nvcc

    exe = nvcc()
    if exe is None:
        raise SystemExit("nvcc not found (PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    return exe


def build(cu_dir: Path, name: str, sources: list[str], dest: Path, defines: tuple[str, ...] = ()
          ) -> tuple[Path | None, str]:
    """nvcc ``sources`` (in ``cu_dir``) into an executable in ``dest`` (``defines``: ``-D`` values).

    Cached by content: a later run with the same ``--work`` directory reuses it.
    """
    dest.mkdir(parents=True, exist_ok=True)
    flags = [*NVCC_FLAGS, *(f"-D{d}" for d in defines)]
    key = hashlib.sha256(b"\0".join([*((cu_dir / s).read_bytes() for s in sources),
                                      " ".join(flags).encode()])).hexdigest()[:16]
    exe = dest / f"{name}-{key}"
    if exe.exists():
        return exe, "cached"
    tmp = dest / f"{name}-{key}.{os.getpid()}.tmp"
    cmd = [nvcc_exe(), *flags, "-o", str(tmp), *(str(cu_dir / s) for s in sources)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        return None, (proc.stdout + proc.stderr)[-2000:]
    os.replace(tmp, exe)
    return exe, proc.stdout + proc.stderr


def build_all(cu_dir: Path, kernels: list[str], dest: Path, jobs: int, defines: tuple[str, ...] = ()
              ) -> dict[str, tuple[Path | None, str]]:
    """The probe and every kernel's harness, built in parallel."""
    todo = {"probe": ["probe.cu"]}
    todo.update({k: [f"{stem(k)}.cu", f"{stem(k)}.harness.cu"] for k in kernels})
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        futs = {k: ex.submit(build, cu_dir, stem(k), srcs, dest, defines) for k, srcs in todo.items()}
        return {k: f.result() for k, f in futs.items()}


def _last_json(text: str) -> dict[str, Any] | None:
    """The last JSON object line of ``text`` (the probe's result)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def merge_lines(text: str) -> dict[str, Any]:
    """A harness's output lines merged: ``init_ms``, ``first_ms``, ``kernel_ms`` and ``modes`` (mode -> times,
    in the order taken)."""
    out: dict[str, Any] = {"modes": {}}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "mode" in rec:  # a mode named twice (interleaved A/B) pools its samples
            out["modes"].setdefault(rec["mode"], []).extend(rec["times"])
        else:
            out.update(rec)
    return out


TRACE_STEPS = ("alloc", "in", "issue", "out", "sync", "free")
"""The steps of a traced call (templates/dropin.cu.j2, transpile_dropin_stamp)."""


def trace_lines(text: str) -> list[dict[str, float]]:
    """The ``transpile-trace`` lines of a harness's stderr (mode ``trace``): each call's step times, ms."""
    out = []
    for line in text.splitlines():
        if line.startswith("transpile-trace "):
            try:
                rec = json.loads(line[len("transpile-trace "):])
            except json.JSONDecodeError:
                continue
            out.append({k: float(rec[k]) for k in TRACE_STEPS if k in rec})
    return out


def floor_ms(rec_bytes: dict[str, int], probe: dict[str, Any]) -> float:
    """Bytes that must cross over the peak measured pinned bandwidth each way, in ms."""
    h2d = max(s["h2d_pinned_GBps"] for s in probe["sizes"])
    d2h = max(s["d2h_pinned_GBps"] for s in probe["sizes"])
    return (rec_bytes["h2d"] / (h2d * 1e9) + rec_bytes["d2h"] / (d2h * 1e9)) * 1e3


def run(args: argparse.Namespace) -> int:
    cu_dir: Path = args.cu_dir
    manifest = json.loads((cu_dir / "manifest.json").read_text())
    kernels = [k for k in R.parse_kernels(args.kernels) if manifest["kernels"].get(k, {}).get("status") == "ok"]
    labels = [s.strip() for s in args.sizes.split(",") if s.strip()]
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-dropin-"))
    args.out.mkdir(parents=True, exist_ok=True)
    jsonl = args.out / "dropin.jsonl"
    jsonl.write_text("")
    t_start = time.monotonic()
    log(f"building {len(kernels)} harnesses and the probe with nvcc ({args.build_jobs} jobs)")
    builds = build_all(cu_dir, kernels, work, args.build_jobs, tuple(args.define))
    probe_exe, msg = builds["probe"]
    if probe_exe is None:
        raise SystemExit(f"probe build failed:\n{msg}")
    if args.probe_json is not None:  # an earlier run's probe (same machine): not measured again
        probe = json.loads(args.probe_json.read_text().splitlines()[0])["probe"]
    else:
        probe = _last_json(subprocess.run([str(probe_exe)], capture_output=True, text=True, timeout=300).stdout)
    if probe is None:
        raise SystemExit("probe printed no result")
    with jsonl.open("a") as f:
        f.write(json.dumps({"probe": probe}) + "\n")
    log("probe: " + json.dumps(probe))
    records: list[dict[str, Any]] = []
    for k in kernels:
        exe, msg = builds[k]
        for label in labels:
            rec: dict[str, Any] = {"kernel": k, "size": label, "sizes": manifest["kernels"][k]["sizes"][label],
                                   "bytes": manifest["kernels"][k]["bytes"][label]}
            left = args.budget - (time.monotonic() - t_start)
            if exe is None:
                rec["error"] = "build failed: " + msg.strip().splitlines()[-1][:200] if msg.strip() else "build failed"
            elif left < 10:
                rec["error"] = "out of budget"
            else:
                try:
                    proc = subprocess.run([str(exe), label, str(args.reps), str(args.mode_budget), args.modes],
                                          capture_output=True, text=True, timeout=min(args.run_timeout, left))
                    rec.update(merge_lines(proc.stdout))
                    traces = trace_lines(proc.stderr)
                    if traces:
                        rec["trace"] = traces
                    if proc.returncode != 0:  # what finished before the failure is kept
                        rec["failure"] = f"exit {proc.returncode}: {(proc.stderr or proc.stdout).strip()[-300:]}"
                except subprocess.TimeoutExpired as e:
                    out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
                    rec.update(merge_lines(out))
                    rec["failure"] = "timed out"
                if not rec.get("kernel_ms") or not rec.get("modes"):
                    rec["error"] = rec.get("failure", "no result")
            if "error" not in rec:
                rec["median_ms"] = {m: statistics.median(v) for m, v in rec["modes"].items() if v}
                rec["kernel_median_ms"] = statistics.median(rec["kernel_ms"])
                rec["floor_ms"] = floor_ms(rec["bytes"], probe) + rec["kernel_median_ms"]
                rec["ratio"] = {m: v / rec["floor_ms"] for m, v in rec["median_ms"].items()}
                minimal = _minimal_first(probe_exe, rec["bytes"])
                if minimal is not None and rec.get("first_ms") is not None:
                    # the first call against a minimal program's first call moving the same bytes (its
                    # context-free setup and pageable copies), plus the kernel time
                    rec["minimal_first_ms"] = minimal
                    rec["first_floor_ms"] = minimal + rec["kernel_median_ms"]
                    rec["first_ratio"] = rec["first_ms"] / rec["first_floor_ms"]
                host = host_floor_ms(rec["bytes"], probe)
                if host is not None:
                    rec["host_floor_ms"] = max(host, floor_ms(rec["bytes"], probe)) + rec["kernel_median_ms"]
            records.append(rec)
            with jsonl.open("a") as f:
                f.write(json.dumps(rec) + "\n")
            log(row_text(rec))
    md = report(records, probe, args)
    (args.out / "dropin.md").write_text(md)
    print(md)
    return 0


def _minimal_first(probe_exe: Path, rec_bytes: dict[str, int]) -> float | None:
    """The median of three fresh processes' ``probe first IN OUT`` (ms), or None if the probe fails."""
    times = []
    for _ in range(3):
        try:
            got = _last_json(subprocess.run([str(probe_exe), "first", str(rec_bytes["h2d"]), str(rec_bytes["d2h"])],
                                            capture_output=True, text=True, timeout=60).stdout)
        except subprocess.TimeoutExpired:
            return None
        if got is None:
            return None
        times.append(got["minimal_first_ms"])
    return statistics.median(times)


def _f(x: float | None, fmt: str = ".3g") -> str:
    return "-" if x is None else format(x, fmt)


def row_text(rec: dict[str, Any]) -> str:
    if "error" in rec:
        return f"| {rec['kernel']} | {rec['size']} | {rec['error']} |"
    note = f" ({rec['failure']})" if rec.get("failure") else ""
    med, ratio = rec["median_ms"], rec["ratio"]
    auto = ratio.get("auto")
    verdict = "-" if auto is None else ("ok" if auto <= ACCEPT else "OVER")
    host = rec.get("host_floor_ms")
    return (f"| {rec['kernel']} | {rec['size']} | {_f(rec['first_ms'])} | {_f(med.get('auto'))} | "
            f"{_f(med.get('staged'))} | {_f(med.get('register'))} | {_f(med.get('serial'))} | "
            f"{_f(med.get('pinned'))} | {_f(med.get('pinned-serial'))} | "
            f"{_f(rec['kernel_median_ms'])} | {_f(rec['floor_ms'])} | {_f(auto, '.2f')} | {verdict} | "
            f"{_f(ratio.get('pinned'), '.2f')} | {_f(host)} | "
            f"{_f(None if host is None or med.get('auto') is None else med['auto'] / host, '.2f')} | "
            f"{_f(rec.get('first_floor_ms'))} | {_f(rec.get('first_ratio'), '.2f')} | "
            f"{rec['bytes']['h2d'] / 1e6:.1f} / {rec['bytes']['d2h'] / 1e6:.1f} / {rec['bytes']['arrays'] / 1e6:.1f}"
            f"{note} |")


def host_floor_ms(rec_bytes: dict[str, int], probe: dict[str, Any]) -> float | None:
    """The pageable bound: bytes each way over the probe's best multi-threaded host memcpy rate, in ms."""
    threads = probe.get("threads")
    if not threads:
        return None
    to = max(s["to_pinned_GBps"] for s in threads)
    frm = max(s["from_pinned_GBps"] for s in threads)
    return (rec_bytes["h2d"] / (to * 1e9) + rec_bytes["d2h"] / (frm * 1e9)) * 1e3


def report(records: list[dict[str, Any]], probe: dict[str, Any], args: argparse.Namespace) -> str:
    lines = [f"# Drop-in calls vs the transfer floor ({datetime.date.today().isoformat()})", "",
             "Probe (same run): GB/s each way; costs in ms.", "",
             "| bytes | H2D pageable | D2H pageable | H2D pinned | D2H pinned | register+unregister ms | "
             "H2D registered (incl. register) | memcpy to pinned | cudaMalloc+Free ms | pool alloc+free ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in probe["sizes"]:
        lines.append(f"| {s['bytes'] >> 20} MiB | {s['h2d_pageable_GBps']:.1f} | {s['d2h_pageable_GBps']:.1f} | "
                     f"{s['h2d_pinned_GBps']:.1f} | {s['d2h_pinned_GBps']:.1f} | {s['register_unregister_ms']:.3f} | "
                     f"{s['h2d_registered_GBps']:.1f} | {s['memcpy_to_pinned_GBps']:.1f} | "
                     f"{s['cudaMalloc_free_ms']:.3f} | {s['pool_alloc_free_ms']:.4f} |")
    if probe.get("threads"):
        lines += ["", f"Host memcpy of 512 MiB split over T threads (GB/s; {probe.get('hardware_threads', '?')} "
                  "hardware threads): " + ", ".join(
                      f"T={s['threads']}: to pinned {s['to_pinned_GBps']:.1f}, from pinned {s['from_pinned_GBps']:.1f}"
                      for s in probe["threads"]) + "."]
    if getattr(args, "define", None):
        lines += ["", "Built with " + " ".join(f"-D{d}" for d in args.define) + "."]
    if probe.get("setup_ms") is not None:
        lines += ["", f"Context-free first-call setup (probe, a fresh process after cudaFree(0): the first 1 MiB "
                  f"cudaMalloc, pageable copy each way, launch and sync, less the same repeated): "
                  f"{probe['setup_first_ms']:.3f} - {probe['setup_warm_ms']:.3f} = {probe['setup_ms']:.3f} ms. "
                  "First floor = a minimal program's first call moving the kernel's bytes (`probe first IN OUT`, "
                  "median of three fresh processes after the context: cudaMalloc, pageable cudaMemcpy in, a "
                  "launch, pageable cudaMemcpy out, cudaFree; its setup included) + the kernel time; first ratio "
                  f"= first call / first floor (acceptance <= {ACCEPT})."]
    lines += ["", f"Calls: first call apart, then median of up to {args.reps} repeated calls per copy path "
              f"(auto; staged and register forced with TRANSPILE_DROPIN_COPY). Floor = bytes that must cross / "
              f"peak pinned bandwidth each way + kernel time (NAME_device, events). Ratio = auto median / floor; "
              f"acceptance <= {ACCEPT} at EXTRALARGE.", "",
              "Pinned: the caller's arrays page-locked (cudaHostRegister before the calls), so the drop-in copies "
              "them directly. Host floor = the floor with each way's bandwidth capped by the probe's best "
              "multi-threaded host memcpy (pageable arrays must be copied by the CPU, or pinned at the "
              "registration rate), and auto / host floor. Serial: auto (and pinned) with every copy-in before "
              "the kernels and every copy-out after them (TRANSPILE_DROPIN_PHASES=0), against the copies "
              "placed between the kernel's phases.", "",
              "| kernel | size | first ms | median ms (auto) | staged ms | register ms | serial ms | pinned ms | "
              "pinned serial ms | kernel ms | "
              "floor ms | ratio | <= 1.5 | pinned ratio | host floor ms | auto / host floor | first floor ms | "
              "first ratio | MB in / out / arrays |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [row_text(r) for r in records]
    other = [(r, m) for r in records if "error" not in r for m in r["median_ms"] if m not in TABLE_MODES]
    if other:
        lines += ["", "Other modes (`KEY=X`: auto with " + ", ".join(f"`{k}`: {v}" for k, v in ENV_MODES.items())
                  + " set to X; a mode named "
                  "more than once in --modes pools its samples, taken in turn with the others):", "",
                  "| kernel | size | mode | samples | median ms | ratio | vs auto |", "|---|---|---|---|---|---|---|"]
        for r, m in other:
            auto = r["median_ms"].get("auto")
            lines.append(f"| {r['kernel']} | {r['size']} | {m} | {len(r['modes'][m])} | {_f(r['median_ms'][m])} | "
                         f"{_f(r['ratio'][m], '.2f')} | {_f(None if auto is None else r['median_ms'][m] / auto, '.2f')} |")
    traced = [r for r in records if r.get("trace")]
    if traced:
        lines += ["", "Traced calls (mode trace: TRANSPILE_DROPIN_TRACE=1), median ms per step: alloc (device "
                  "buffers from the pool), in (copy-ins of point 0; a staged range returns once its last DMA is "
                  "issued), issue (kernels and interior points), out (copy-outs of the last point), sync (the "
                  "three streams), free (buffers back, unregistration):", "",
                  "| kernel | size | calls | " + " | ".join(TRACE_STEPS) + " | total |",
                  "|---|---|---|" + "---|" * (len(TRACE_STEPS) + 1)]
        for r in traced:
            calls = r["trace"]
            med = [statistics.median(c.get(k, 0.0) for c in calls) for k in TRACE_STEPS]
            total = statistics.median(sum(c.get(k, 0.0) for k in TRACE_STEPS) for c in calls)
            lines.append(f"| {r['kernel']} | {r['size']} | {len(calls)} | " + " | ".join(_f(m) for m in med)
                         + f" | {_f(total)} |")
    xl = [r for r in records if r["size"] == "EXTRALARGE" and "error" not in r and "auto" in r["ratio"]]
    over = [r["kernel"] for r in xl if r["ratio"]["auto"] > ACCEPT]
    if xl:
        lines += ["", f"EXTRALARGE: {len(xl) - len(over)}/{len(xl)} within {ACCEPT}x of the floor"
                  + (f"; over: {', '.join(over)}" if over else "") + "."]
    else:  # the acceptance is the default path's (auto); other modes alone say nothing of it
        lines += ["", "EXTRALARGE: no auto mode timed, so no verdict against the floor."]
    return "\n".join(lines) + "\n"


def dry_run(args: argparse.Namespace) -> int:
    """Generate (unless ``--cu-dir`` has the files) and nvcc every harness and the probe; no GPU."""
    kernels = R.parse_kernels(args.kernels)
    cu_dir = args.cu_dir or Path(tempfile.mkdtemp(prefix="bench-dropin-")) / "cu"
    missing = [k for k in kernels if not (cu_dir / f"{stem(k)}.harness.cu").exists()]
    if missing or not (cu_dir / "probe.cu").exists():
        generate(missing, cu_dir)
    manifest = json.loads((cu_dir / "manifest.json").read_text())
    ok_kernels = [k for k in kernels if manifest["kernels"].get(k, {}).get("status") == "ok"]
    builds = build_all(cu_dir, ok_kernels, args.work or cu_dir / "build", args.build_jobs, tuple(args.define))
    print("| kernel | build | MB in / out / arrays (LARGE) | MB in / out / arrays (EXTRALARGE) |")
    print("|---|---|---|---|")
    bad = [k for k in kernels if k not in ok_kernels]
    for k in ok_kernels:
        exe, msg = builds[k]
        b = manifest["kernels"][k]["bytes"]
        cells = [f"{b[lab]['h2d'] / 1e6:.1f} / {b[lab]['d2h'] / 1e6:.1f} / {b[lab]['arrays'] / 1e6:.1f}"
                 for lab in ("LARGE", "EXTRALARGE")]
        print(f"| {k} | {'ok' if exe else 'FAIL: ' + msg.strip()[-200:]} | {cells[0]} | {cells[1]} |")
        if exe is None:
            bad.append(k)
    if builds["probe"][0] is None:
        bad.append("probe")
        print("probe build failed:\n" + builds["probe"][1])
    print(f"\n{len(ok_kernels) + 1 - len(bad)}/{len(kernels) + 1} builds ok; files in {cu_dir}")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", help="comma-separated names (fdtd-2d or fdtd_2d); default: all 30")
    ap.add_argument("--generate", type=Path, metavar="DIR", help="only write the sources and the manifest")
    ap.add_argument("--cu-dir", type=Path, help="the --generate directory (on the GPU machine)")
    ap.add_argument("--dry-run", action="store_true", help="generate and nvcc every harness; no GPU")
    ap.add_argument("--sizes", default="LARGE,EXTRALARGE")
    ap.add_argument("--modes", default=",".join(MODES), help="copy paths to time (auto, staged, register, pinned)")
    ap.add_argument("--reps", type=int, default=7, help="repeated calls per copy path (at least 2)")
    ap.add_argument("--mode-budget", type=float, default=15.0,
                    help="seconds per copy path after which no more repeated calls start (2 at least)")
    ap.add_argument("--run-timeout", type=float, default=400.0, help="seconds per (kernel, size) run")
    ap.add_argument("--budget", type=float, default=3000.0, help="seconds for the whole run")
    ap.add_argument("--build-jobs", type=int, default=min(8, os.cpu_count() or 2))
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                    help="a -D for every build, e.g. TRANSPILE_STAGE_THREADS=4, TRANSPILE_STAGE_SLOT_BYTES=..., "
                         "TRANSPILE_REGISTER_MIN_BYTES=... (the drop-in's tunables, docs/dropin.md)")
    ap.add_argument("--work", type=Path, help="build directory (default: a new temp dir)")
    ap.add_argument("--probe-json", type=Path, metavar="JSONL",
                    help="reuse the probe of an earlier run's dropin.jsonl (its first line) instead of measuring")
    ap.add_argument("--out", type=Path,
                    default=Path(os.environ["OUT"]) if os.environ.get("OUT") else ROOT / "bench" / "results")
    args = ap.parse_args(argv)
    bad_modes = [m for m in args.modes.split(",") if m and not mode_known(m)]
    if bad_modes:
        ap.error(f"unknown mode(s) {', '.join(bad_modes)}: {', '.join(TABLE_MODES)}, trace, or KEY=VALUE "
                 f"('+'-joined) with KEY in {', '.join(ENV_MODES)}")
    if args.generate:
        m = generate(R.parse_kernels(args.kernels), args.generate)
        bad = {k: e["status"] for k, e in m["kernels"].items() if e["status"] != "ok"}
        print(f"wrote {len(m['kernels'])} kernels to {args.generate}" + (f"; failed: {bad}" if bad else ""))
        return 1 if bad else 0
    if args.dry_run:
        return dry_run(args)
    if not args.cu_dir:
        ap.error("--cu-dir DIR (from --generate) is needed on the GPU machine")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

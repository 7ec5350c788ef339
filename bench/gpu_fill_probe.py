"""On a GPU: what a candidate finds in its fresh allocations under the GPU stages; prints a table.

    python bench/gpu_fill_probe.py [--seeds 4] [--out DIR]

Builds a probe the way the GPU stages build a candidate (transpile/verify/gpu_build.py: a plain
nvcc compile, include/gpu_interpose.cpp linked by ``--wrap``, symbols stripped) and runs it in a
worker as the stages do: one checking call per seed (``fill_seed``) and one call of the timing
request.  The probe makes 48 allocations of 256 bytes (16 each with cudaMalloc, cudaMallocAsync
on a stream of its own, cudaMallocHost), reads the first 16 bytes of each back and frees them
(and says which allocation calls failed).
Each allocation is classed: zero, one byte repeated, f64 NaNs, f32 NaNs, other (random bytes or
finite values).  Exit status 1 when a checking call saw no fill at all, every allocation of a call
alike, two seeds the same fills, or the timing call a filled (non-zero) cudaMalloc.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROBE = r'''
#include <cuda_runtime.h>
#include <string.h>

extern "C" void probe(int n, unsigned char* out)
{
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  if (n < 48 * 17) return;
  for (int k = 0; k < 48; k++) {
    void* p = nullptr;
    cudaError_t e = k < 16 ? cudaMalloc(&p, 256) : k < 32 ? cudaMallocAsync(&p, 256, s) : cudaMallocHost(&p, 256);
    out[48 * 16 + k] = e == cudaSuccess && p;  // whether the allocation was made
    if (!out[48 * 16 + k]) continue;
    cudaStreamSynchronize(s);
    if (k < 32) cudaMemcpy(out + 16 * k, p, 16, cudaMemcpyDeviceToHost);
    else memcpy(out + 16 * k, p, 16);
    if (k < 16) cudaFree(p);
    else if (k < 32) cudaFreeAsync(p, s);
    else cudaFreeHost(p);
  }
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
}
'''

PARAMS = [("n", "i32", False, "in"), ("out", "u8", True, "out")]
KINDS = ("cudaMalloc", "cudaMallocAsync", "cudaMallocHost")


def classify(b: bytes) -> str:
    if not any(b):
        return "zero"
    if len(set(b)) == 1:
        return "byte"
    w64 = np.frombuffer(b, "<u8")
    if all(((w >> 52) & 0x7FF) == 0x7FF and (w & ((1 << 52) - 1)) for w in map(int, w64)):
        return "nan64"
    w32 = np.frombuffer(b, "<u4")
    if all(((w >> 23) & 0xFF) == 0xFF and (w & ((1 << 23) - 1)) for w in map(int, w32)):
        return "nan32"
    return "other"


def main() -> int:
    from transpile.verify import gpu
    from transpile.verify.gpu_build import build_gpu_library

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench/results")))
    args = ap.parse_args()
    info = gpu.detect()
    if not info.available:
        print(f"no GPU: {info.reason}")
        return 2
    with tempfile.TemporaryDirectory() as d:
        cu = Path(d) / "probe.cu"
        cu.write_text(PROBE)
        lib, output = build_gpu_library(cu)
    if lib is None:
        print(output)
        return 1
    print(f"GPU: {info.name}; fill switch at offset {lib.fill_offset}")
    inputs = {"n": np.int32(48 * 17), "out": np.zeros(48 * 17, np.uint8)}
    rows, problems, seen = [], [], {}
    load = {"op": "load", "lib": str(lib.path), "params": PARAMS, "name": "probe", "device": False,
            "fill_offset": lib.fill_offset}
    w = gpu.Worker(lib=lib)
    try:
        w.request(load, timeout=120)
        for s in range(args.seeds):
            seed = int(np.random.default_rng(s).integers(1, 2**63))
            out = w.request({"op": "run", "inputs": inputs, "device": False, "fill_seed": seed}, timeout=120)
            rows.append((f"check, seed {s}", out["arrays"]["out"]))
    finally:
        w.close()
    w = gpu.Worker(lib=lib)  # as stage (f): a fresh process (a block freed after a fill is not fresh memory)
    try:
        w.request(load, timeout=120)
        res = w.request({"op": "time", "sets": [inputs], "outputs": ["out"], "device": False, "dropin_iters": 1},
                        timeout=120)
        rows.append(("timing", res["last_dropin"]["arrays"]["out"]))
    finally:
        w.close()
    lines = ["| call | allocation | zero | byte | nan64 | nan32 | other | failed | distinct |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, out in rows:
        chunks = [bytes(out[16 * k:16 * k + 16]) for k in range(48)]
        for i, kind in enumerate(KINDS):
            part = chunks[16 * i:16 * i + 16]
            made = out[48 * 16 + 16 * i:48 * 16 + 16 * i + 16]
            classes = [classify(c) if ok else "failed" for c, ok in zip(part, made)]
            counts = {c: classes.count(c) for c in ("zero", "byte", "nan64", "nan32", "other", "failed")}
            if counts["failed"]:
                problems.append(f"{label}: {counts['failed']} {kind} call(s) failed")
            lines.append(f"| {label} | {kind} | " + " | ".join(str(counts[c]) for c in counts)
                         + f" | {len(set(part))} |")
            if label.startswith("check"):
                if counts["zero"] == 16:
                    problems.append(f"{label}: {kind} not filled")
                if len(set(part)) == 1:
                    problems.append(f"{label}: {kind} filled alike every time")
                key = (kind, tuple(part))
                if key in seen:
                    problems.append(f"{label}: {kind} filled as {seen[key]}")
                seen[key] = label
            elif kind == "cudaMalloc" and counts["zero"] < 16:
                problems.append(f"timing: {16 - counts['zero']} cudaMalloc block(s) not zero (filled while timing?)")
    text = "\n".join(lines)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_fill_probe.md").write_text(text + "\n")
    for p in problems:
        print("problem:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

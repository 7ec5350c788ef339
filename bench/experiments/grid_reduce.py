"""Time grid reductions and row programs on a GPU: a dot product, a sum of squares and a float max, each transpiled
(``transpile/cuda_reduce.grid_launch``) and built twice, as emitted and with
``-DTRANSPILE_GRID_MAX_BLOCKS=1`` (one block of 256 threads, the form before grid reductions and
the one kept inside host loops); CUDA events around ``NAME_device`` on cupy arrays, median of 20
after 3 warm-up calls, against a device-to-device copy of the same bytes measured in the same run.
Prints one table; checks each result against numpy (float64 sums to 1e-9 relative).  Then softmax
over rows (``rowprog``: a warp per row) against ``--naive`` (a thread per row), checked against cupy.

    python bench/experiments/grid_reduce.py --generate DIR      # here: transpile (needs the front end)
    python3 bench/experiments/grid_reduce.py --run DIR          # on the GPU machine: nvcc, cupy

First run: H100, 2026-12-05, `bench/results/h100_run62_grid_reduce.md`.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import subprocess
import sys
from pathlib import Path

KERNELS = {
    "dot": ("double dot(int n, const double x[n], const double y[n]) {\n  double s = 0.0;\n"
            "  for (int i = 0; i < n; i++)\n    s += x[i] * y[i];\n  return s;\n}\n", ("x", "y"), "f8"),
    "sumsq": ("double sumsq(int n, const double x[n]) {\n  double s = 0.0;\n"
              "  for (int i = 0; i < n; i++)\n    s += x[i] * x[i];\n  return s;\n}\n", ("x",), "f8"),
    "maxf": ("#include <math.h>\nfloat maxf(int n, const float x[n]) {\n  float m = -INFINITY;\n"
             "  for (int i = 0; i < n; i++)\n    m = fmaxf(m, x[i]);\n  return m;\n}\n", ("x",), "f4"),
}
SIZES = (1 << 20, 1 << 24, 1 << 27)
SOFTMAX = (Path(__file__).resolve().parents[2] / "examples" / "softmax.c").read_text()
BATCHED = """#include <math.h>
void bsoftmax(int B, int n, int m, const float X[B][n][m], float Y[B][n][m])
{
  for (int b = 0; b < B; b++)
    for (int i = 0; i < n; i++) {
      float mx = -INFINITY;
      for (int j = 0; j < m; j++)
        mx = fmaxf(mx, X[b][i][j]);
      float s = 0.0f;
      for (int j = 0; j < m; j++) {
        Y[b][i][j] = expf(X[b][i][j] - mx);
        s += Y[b][i][j];
      }
      for (int j = 0; j < m; j++)
        Y[b][i][j] /= s;
    }
}
"""
BATCHED_FIRST = BATCHED.replace("float mx = -INFINITY;\n      for (int j = 0; j < m; j++)\n        mx",
                                "float mx = X[b][i][0];\n      for (int j = 1; j < m; j++)\n        mx")
assert BATCHED_FIRST != BATCHED
BATCHED_BUILDS = {"bsoftmax": (BATCHED, "max from -INFINITY"),
                  "bsoftmax_first": (BATCHED_FIRST, "max from X[b][i][0], as examples/softmax.c")}
"""The batched sources timed beside the 2-D rows.  Run 67 (H100): 0.308 ms from -INFINITY against 0.234
from the first element, the 2-D example's 0.234: the gap is the max's start, not the batch
(bench/results/h100_run67_softmax_batch.md)."""
BATCH = 16
ROWS = ((4096, 4096), (65536, 1024), (1024, 32768), (256, 4096), (32, 131072), (16384, 256))


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, (src, _arrays, _dt) in KERNELS.items():
        c = out / f"{name}.c"
        c.write_text(src)
        subprocess.run([sys.executable, "-m", "transpile.cli", str(c), "-o", str(out / f"{name}.cu")], check=True)
        print(out / f"{name}.cu")
    c = out / "softmax.c"
    c.write_text(SOFTMAX)
    for label, extra in (("", []), (".naive", ["--naive"])):  # a warp per row (rowprog); a thread per row
        subprocess.run([sys.executable, "-m", "transpile.cli", str(c), "-o", str(out / f"softmax{label}.cu"), *extra],
                       check=True)
        print(out / f"softmax{label}.cu")
    for name, (src, _label) in BATCHED_BUILDS.items():  # the same rows as 16 matrices of n / 16 rows
        c = out / f"{name}.c"
        c.write_text(src)
        subprocess.run([sys.executable, "-m", "transpile.cli", str(c), "-o", str(out / f"{name}.cu")], check=True)
        print(out / f"{name}.cu")
    code = (out / "softmax.cu").read_text()
    unrolled = re.sub(r"^( *)(for \(long long j_[lt])", r"\1#pragma unroll 4\n\1\2", code, flags=re.M)
    assert unrolled != code
    (out / "softmax.unroll4.cu").write_text(unrolled)
    print(out / "softmax.unroll4.cu")


SOFTMAX_BUILDS = {"": ("as emitted", None), "#warp": ("warp a row", "0"), "#block": ("block a row", "1000000000"),
                  ".unroll4#warp": ("warp a row, lane loops unrolled by 4", "0"),
                  ".unroll4#block": ("block a row, lane loops unrolled by 4", "1000000000"),
                  ".before": ("warp a row, before the map-reduce fusion", None), ".naive": ("thread a row", None)}
"""Softmax builds timed when present: ``softmax<suffix>.cu`` (the part before ``#``), with
``TRANSPILE_ROWPROG_BLOCK_ROWS`` set to the second item when it is not None (0: a warp a row; a large
value: a block a row; unset: the host's choice).  ``.unroll4`` is the emitted file with ``#pragma
unroll 4`` before each lane loop (a candidate, not emitted by the compiler); ``.before`` one
generated before the row program's map and sum were one loop (copy it in by hand)."""


def run_softmax(out: Path) -> None:
    """Softmax over rows: the row program builds against one thread per row (--naive) and, when
    torch is importable, ``torch.softmax`` on the same device array (what a user would call)."""
    import cupy as cp
    import numpy as np

    calls: dict[str, tuple[object, str | None]] = {}
    libs: dict[str, object] = {}
    for key, (label, env) in SOFTMAX_BUILDS.items():
        suffix = key.split("#")[0]
        cu = out / f"softmax{suffix}.cu"
        if not cu.exists():
            continue
        if suffix not in libs:
            so = out / f"libsoftmax{suffix}.so"
            subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-shared", "-Xcompiler", "-fPIC", "-o", str(so), str(cu)],
                           check=True)
            libs[suffix] = ctypes.CDLL(str(so)).softmax_device
        calls[label] = (libs[suffix], env)
    batched: dict[str, object] = {}
    for name, (_src, label) in BATCHED_BUILDS.items():
        if (out / f"{name}.cu").exists():
            so = out / f"lib{name}.so"
            subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-shared", "-Xcompiler", "-fPIC", "-o", str(so),
                            str(out / f"{name}.cu")], check=True)
            batched[label] = ctypes.CDLL(str(so)).bsoftmax_device
    try:
        import torch
    except ImportError:
        torch = None
    print("| softmax n x m | build | ms | GB/s (X read, Y written once) | correct |")
    print("|---|---|---|---|---|")
    for n, m in ROWS:
        x = cp.asarray(np.random.default_rng(n).uniform(-4, 4, (n, m)).astype(np.float32))
        want = cp.exp(x - x.max(axis=1, keepdims=True))
        want /= want.sum(axis=1, keepdims=True)
        for label, (fn, env) in calls.items():
            if env is None:
                os.environ.pop("TRANSPILE_ROWPROG_BLOCK_ROWS", None)
            else:
                os.environ["TRANSPILE_ROWPROG_BLOCK_ROWS"] = env
            y = cp.empty_like(x)
            fn.restype = ctypes.c_int  # type: ignore[attr-defined]
            stream = ctypes.c_void_p(cp.cuda.get_current_stream().ptr)
            args = (ctypes.c_int(n), ctypes.c_int(m), ctypes.c_void_p(x.data.ptr), ctypes.c_void_p(y.data.ptr), stream)
            ms = _median_ms(lambda: fn(*args))  # type: ignore[operator]  # noqa: B023
            ok = bool(cp.allclose(y, want, rtol=1e-4, atol=1e-7))
            print(f"| {n} x {m} | {label} | {ms:.4g} | {2 * x.nbytes / ms / 1e6:.0f} | {ok} |")
        for label, bfn in batched.items():
            if n % BATCH:
                break
            os.environ.pop("TRANSPILE_ROWPROG_BLOCK_ROWS", None)
            y = cp.empty_like(x)
            bfn.restype = ctypes.c_int  # type: ignore[attr-defined]
            stream = ctypes.c_void_p(cp.cuda.get_current_stream().ptr)
            bargs = (ctypes.c_int(BATCH), ctypes.c_int(n // BATCH), ctypes.c_int(m), ctypes.c_void_p(x.data.ptr),
                     ctypes.c_void_p(y.data.ptr), stream)
            ms = _median_ms(lambda: bfn(*bargs))  # type: ignore[operator]  # noqa: B023
            ok = bool(cp.allclose(y, want, rtol=1e-4, atol=1e-7))
            print(f"| {n} x {m} | batched: {BATCH} x {n // BATCH} rows, {label}, as emitted | {ms:.4g} | "
                  f"{2 * x.nbytes / ms / 1e6:.0f} | {ok} |")
        if torch is not None:
            tx = torch.from_dlpack(x)
            box: list[object] = []
            ms = _median_ms(lambda: box.append(torch.softmax(tx, dim=1)))  # noqa: B023
            ok = bool(cp.allclose(cp.from_dlpack(box[-1]), want, rtol=1e-4, atol=1e-7))
            box.clear()
            print(f"| {n} x {m} | torch.softmax {torch.__version__} | {ms:.4g} | {2 * x.nbytes / ms / 1e6:.0f} | {ok} |")


def run(out: Path) -> None:
    import cupy as cp
    import numpy as np

    rows = []
    for name, (_src, arrays, dt) in KERNELS.items():
        libs = {}
        for label, flags in (("grid", []), ("one block", ["-DTRANSPILE_GRID_MAX_BLOCKS=1"])):
            so = out / f"lib{name}-{label.replace(' ', '_')}.so"
            subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-shared", "-Xcompiler", "-fPIC", *flags,
                            "-o", str(so), str(out / f"{name}.cu")], check=True)
            libs[label] = ctypes.CDLL(str(so))
        for n in SIZES:
            rng = np.random.default_rng(n)
            host = [rng.uniform(-1, 1, n).astype(dt) for _ in arrays]
            dev = [cp.asarray(h) for h in host]
            slot = cp.zeros(1, dtype=dt)
            if name == "dot":
                want = float(np.dot(host[0], host[1]))
            elif name == "sumsq":
                want = float(np.dot(host[0], host[0]))
            else:
                want = float(host[0].max())
            nbytes = sum(h.nbytes for h in host)
            src, dst = cp.empty(nbytes // 8, dtype=np.float64), cp.empty(nbytes // 8, dtype=np.float64)
            copy_ms = _median_ms(lambda: cp.copyto(dst, src))  # noqa: B023 (called here)
            for label, lib in libs.items():
                fn = getattr(lib, f"{name}_device")
                fn.restype = ctypes.c_int
                ptrs = [ctypes.c_void_p(d.data.ptr) for d in dev] + [ctypes.c_void_p(slot.data.ptr)]
                stream = ctypes.c_void_p(cp.cuda.get_current_stream().ptr)

                def call() -> None:
                    assert fn(ctypes.c_int(n), *ptrs, stream) == 0  # noqa: B023

                ms = _median_ms(call)
                got = float(slot.get()[0])
                ok = abs(got - want) <= 1e-9 * max(1.0, abs(want)) if dt == "f8" else got == want
                rows.append((name, n, label, ms, nbytes / ms / 1e6, 2 * nbytes / copy_ms / 1e6, ok))
    print("| kernel | n | build | ms | GB/s read | copy GB/s (read+write) | % of copy | correct |")
    print("|---|---|---|---|---|---|---|---|")
    for name, n, label, ms, gbs, copy, ok in rows:
        print(f"| {name} | {n} | {label} | {ms:.4g} | {gbs:.0f} | {copy:.0f} | {100 * gbs / copy:.1f}% | {ok} |")


def _median_ms(fn: object, warm: int = 3, reps: int = 20) -> float:
    import cupy as cp

    for _ in range(warm):
        fn()  # type: ignore[operator]
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()  # type: ignore[operator]
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return sorted(times)[len(times) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--generate", type=Path)
    g.add_argument("--run", type=Path)
    ap.add_argument("--softmax-only", action="store_true", help="with --run: only the softmax builds")
    args = ap.parse_args()
    if args.generate:
        generate(args.generate)
    else:
        if not args.softmax_only:
            run(args.run)
        run_softmax(args.run)


if __name__ == "__main__":
    main()

"""The tensor-core kernels' sm_80 path on a Hopper GPU, beside the sm_90 path (issue 41, docs/architectures.md).

    python bench/arch_mma.py --generate bench/arch_cu      # here (needs transpile): K.cu per kernel
    python3 bench/arch_mma.py --cu-dir bench/arch_cu       # on the GPU machine: nvcc, gcc, numpy, cupy

Each matmul-like PolyBench kernel whose default output has a tensor-core
kernel (gemm, 2mm, 3mm, syrk, syr2k, symm, trmm, covariance, correlation,
doitgen) is built four ways from the same ``K.cu``:

* ``sm_90``: ``nvcc -arch=sm_90``: the tensor-core (DMMA) kernels;
* ``sm_80``: ``nvcc -arch=sm_80``: on an sm_90 GPU the driver JIT-compiles its
  compute_80 PTX, where the sm_90 bodies are not compiled in; the host sees the
  kernel's PTX version 80 and launches the FMA kernels (the path of A100, L4,
  RTX 30/40);
* ``fat``: ``-gencode`` for sm_75, 80, 86, 89, 90, 100, 120 (the user's fat
  binary): must pick the sm_90 code, so time like ``sm_90``;
* ``sm_90 FMA``: the sm_90 build with ``TRANSPILE_MMA=0`` (the FMA kernels on
  purpose): should time like ``sm_80``.

Each build runs in a child process of its own: ``K_device`` on device arrays
(cupy) with tests/polybench.py's inputs, checked at an off-grid size against the
gcc reference (tests/polybench.py's flags; error relative to the largest
reference magnitude, at most 1e-9), then timed at the timing size (CUDA events,
2 warm-up calls, median of ``--iters``; inputs restored outside the timed region)
and its outputs there compared with the ``sm_90`` build's (1e-8).  Prints one
table: milliseconds per build, sm_80 / sm_90 and the checks.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from tests.polybench import make_args, run_c, spec  # noqa: E402

KERNELS = ("gemm", "2mm", "3mm", "syrk", "syr2k", "symm", "trmm", "covariance", "correlation", "doitgen")
ARCHES = (75, 80, 86, 89, 90, 100, 120)
BUILDS = {"sm_90": ["-arch=sm_90"], "sm_80": ["-arch=sm_80"],
          "fat": [f"-gencode=arch=compute_{a},code=sm_{a}" for a in ARCHES]}
#: (build, environment) per timed column.
COLUMNS = {"sm_90": ("sm_90", {}), "sm_80": ("sm_80", {}), "fat": ("fat", {}),
           "sm_90 FMA": ("sm_90", {"TRANSPILE_MMA": "0"})}
CHECK_TOL, CROSS_TOL = 1e-9, 1e-8


def sizes(name: str, kind: str) -> dict[str, int]:
    """Off-grid check sizes, or the timing sizes, for every size parameter of ``name``."""
    if name == "doitgen":
        return {"nr": 67, "nq": 59, "np": 131} if kind == "check" else {"nr": 256, "nq": 256, "np": 512}
    params = [p.name for p in spec(name).params if p.kind == "size"]
    return {p: (517 if kind == "check" else 4096) for p in params}


def generate(out: Path) -> None:
    """Write ``out/K.cu``: the default output (every architecture) of each kernel."""
    from transpile import cuda, frontend, pipeline

    out.mkdir(parents=True, exist_ok=True)
    for name in KERNELS:
        s = spec(name)
        text = cuda.emit(pipeline.lower(frontend.load(s.path, function=s.function)), source=s.path.name)
        assert "transpile_mma_ok" in text, f"{name}: no tensor-core kernel in the default output"
        (out / f"{name}.cu").write_text(text)
        print(f"wrote {out / name}.cu")


def build(cu: Path, flags: list[str], lib: Path) -> str | None:
    """``nvcc -O3 -shared`` of ``cu`` with ``flags`` into ``lib``; the error text or None."""
    proc = subprocess.run(["nvcc", *flags, "-O3", "-Xcompiler", "-fPIC", "-shared", "-o", str(lib), str(cu)],
                          capture_output=True, text=True)
    return None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["nvcc failed"])[-1]


def child(lib: str, name: str, iters: int, save: str) -> dict[str, object]:
    """In the child: check at the check size against gcc, time at the timing size, save its outputs."""
    import cupy as cp

    s = spec(name)
    fn = getattr(ctypes.CDLL(lib), f"{s.function}_device")
    fn.restype = ctypes.c_int

    def call(args: dict[str, object], dev: dict[str, object]) -> None:
        c_args: list[object] = []
        for p in s.params:
            if p.kind in ("size", "int"):
                c_args.append(ctypes.c_int(int(args[p.name])))  # type: ignore[call-overload]
            elif p.kind == "double":
                c_args.append(ctypes.c_double(float(args[p.name])))  # type: ignore[arg-type]
            else:
                c_args.append(ctypes.c_void_p(dev[p.name].data.ptr))  # type: ignore[attr-defined]
        err = fn(*c_args, ctypes.c_void_p(0))
        if err != 0:
            raise RuntimeError(f"{s.function}_device returned CUDA error {err}")

    rng = np.random.default_rng(41)
    args = make_args(name, rng, sizes(name, "check"))
    ref = run_c(name, args)
    dev = {p.name: cp.asarray(args[p.name]) for p in s.arrays}
    call(args, dev)
    cp.cuda.Device().synchronize()
    err = 0.0
    for p in s.arrays:
        got, want = cp.asnumpy(dev[p.name]), ref[p.name]
        err = max(err, float(np.max(np.abs(got - want))) / max(1.0, float(np.max(np.abs(want)))))
    args = make_args(name, rng, sizes(name, "time"))
    pristine = {p.name: cp.asarray(args[p.name]) for p in s.arrays}
    work = {k: v.copy() for k, v in pristine.items()}
    times = []
    for n in range(2 + iters):
        for k in work:
            work[k][...] = pristine[k]
        cp.cuda.Device().synchronize()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        call(args, work)
        stop.record()
        stop.synchronize()
        if n >= 2:
            times.append(cp.cuda.get_elapsed_time(start, stop))
    np.savez(save, **{k: cp.asnumpy(v) for k, v in work.items()})
    return {"check_err": err, "ms": statistics.median(times)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generate", type=Path, help="write DIR/K.cu here (needs transpile)")
    ap.add_argument("--cu-dir", type=Path, help="on the GPU machine: build, check and time DIR/K.cu")
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--child", nargs=3, metavar=("LIB", "KERNEL", "SAVE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], a.iters, a.child[2])))
        return
    if a.generate:
        generate(a.generate)
        return
    if not a.cu_dir:
        ap.error("--generate DIR or --cu-dir DIR")
    names = [k for k in a.kernels.split(",") if k]
    tmp = Path(tempfile.mkdtemp(prefix="arch_mma."))
    jobs = {(k, b): (a.cu_dir / f"{k}.cu", flags, tmp / f"{k}.{b}.so") for k in names for b, flags in BUILDS.items()}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as ex:
        built = dict(zip(jobs, ex.map(lambda j: build(*j), jobs.values())))
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    print(f"device: {dev.stdout.strip() or '?'}; median of {a.iters} calls of K_device, inputs restored "
          "before each, milliseconds")
    cols = list(COLUMNS)
    print("| kernel | timing size | " + " | ".join(f"{c} ms" for c in cols) + " | sm_80 / sm_90 | checks |")
    print("|---" * (len(cols) + 4) + "|")
    for k in names:
        row: dict[str, dict[str, object]] = {}
        notes = []
        for col, (b, env) in COLUMNS.items():
            if built[(k, b)] is not None:
                notes.append(f"{b}: build failed: {built[(k, b)]}")
                continue
            save = tmp / f"{k}.{col.replace(' ', '_')}.npz"
            proc = subprocess.run([sys.executable, __file__, "--iters", str(a.iters), "--child",
                                   str(jobs[(k, b)][2]), k, str(save)],
                                  capture_output=True, text=True, env={**os.environ, **env}, timeout=900)
            if proc.returncode != 0:
                notes.append(f"{col}: failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
                continue
            row[col] = json.loads(proc.stdout.strip().splitlines()[-1])
            row[col]["save"] = str(save)
            if float(row[col]["check_err"]) > CHECK_TOL:  # type: ignore[arg-type]
                notes.append(f"{col}: WRONG vs gcc (rel err {row[col]['check_err']:.1e})")
        if "sm_90" in row:
            base = np.load(str(row["sm_90"]["save"]))
            for col in row:
                other = np.load(str(row[col]["save"]))
                rel = max(float(np.max(np.abs(other[x] - base[x]))) / max(1.0, float(np.max(np.abs(base[x]))))
                          for x in base.files)
                if rel > CROSS_TOL:
                    notes.append(f"{col}: differs from sm_90 at the timing size (rel {rel:.1e})")
        ms = [f"{row[c]['ms']:.3f}" if c in row else "-" for c in cols]
        ratio = (f"{float(row['sm_80']['ms']) / float(row['sm_90']['ms']):.2f}x"  # type: ignore[arg-type]
                 if "sm_80" in row and "sm_90" in row else "-")
        worst = max((float(r["check_err"]) for r in row.values()), default=float("nan"))  # type: ignore[arg-type]
        check = "; ".join(notes) if notes else f"all ok (max rel err vs gcc {worst:.1e})"
        size = " ".join(f"{x}={v}" for x, v in sizes(k, "time").items())
        print(f"| {k} | {size} | " + " | ".join(ms) + f" | {ratio} | {check} |", flush=True)


if __name__ == "__main__":
    main()

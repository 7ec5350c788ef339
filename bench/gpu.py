"""Benchmark the 30 PolyBench kernels on a GPU: correctness, time, bandwidth, roofline.

    python bench/gpu.py --dry-run [--cu-dir DIR]          # here: generate + nvcc -cubin, print the plan
    python bench/gpu.py --generate DIR                     # here: write DIR/K.cu, DIR/K.naive.cu, manifest
    python3 bench/gpu.py --cu-dir DIR [--plot] [--budget 420]  # on the GPU machine
    python bench/gpu.py --plot-from bench/results/h200.jsonl   # PNG + HTML from the raw records

On the GPU machine, for every kernel (``--kernels`` filters, PolyBench or file
spelling), one after another, in a child process of its own (a kernel that
crashes its CUDA context cannot take the rest down):

* build ``K.cu`` (default pipeline, "opt"), ``K.naive.cu`` (``transpile --naive``:
  map-gpu alone; not with ``--skip-naive``) and every candidate ``K.cand-<label>.cu``
  of ``--cu-dir`` (label ``[A-Za-z0-9_.=x-]+``, written by another tool; variant
  ``cand-<label>``) with ``nvcc -arch=sm_90 -O3 -shared`` (all builds in parallel
  at the start); the candidates run in a GPU child of their own after opt's, and
  are reported in the "Candidates" section only (the table and summary are opt's).
  That child also times opt's library again (variant ``default-again``, shown as
  opt-again), round-robin with the candidates sample by sample: their speedups are
  over it, since two children time the same build differently;
* correctness: ``K_device`` on inputs from tests/polybench.py's recipes
  (well-conditioned: SPD for cholesky, diagonally dominant for lu, ...) at
  ``EX`` (PolyBench EXTRALARGE; time steps cut where the CPU reference would
  take longer than ``--cpu-cap``), ``off1`` and ``off2`` (odd sizes off any tile
  grid) and ``BIG`` (memory-bound kernels past the L2); every output compared
  with the gcc reference (fp64, ``-O3 -march=native -ffp-contract=off``) under
  the verifier's tolerance (``1e-10 sqrt(depth)``, widened by 16x the measured
  FMA rounding spread where it was measured, as transpile/verify does);
* timing: ``K_device`` with CUDA events at ``EX`` (and ``BIG``): input sets
  rotated over 3 device copies, restored from a pristine copy and the L2
  flushed (256 MB memset) outside the timed region before every call, the
  stream synchronised before each call, warm-up, median of ``--iters`` (20;
  fewer only when the kernel's time budget runs out: the count is in the
  table); the same for the naive build and, for gemm/2mm/3mm/syrk, cupy.matmul
  on the same arrays (cuBLAS);
* the CPU: the gcc -O3 reference on one core, timed, in ``--cpu-jobs``
  concurrent processes that run while the GPU is busy (the GPU timing stays
  sequential; the CPU times are taken with other references running on other
  cores, flagged in the report).  A run that cannot finish is estimated from
  the largest finished one by the flop model (``est``).

The same run measures the device-to-device copy bandwidth (cudaMemcpy of 1 GiB,
read + write counted) and cuBLAS DGEMM at 1000x1200x1100, 2000x2600x2300 and
4096^3 (MxKxN).  Output (``--out``, default ``$OUT`` if set, else bench/results):
``h200.md`` (date, device, table, model), ``h200.jsonl`` (raw records, written
as they come), and with ``--plot`` ``h200.png`` and ``h200.html``.  The bytes
and flop model, the sizes and the table live in bench/roofline.py.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import glob
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

import roofline as R  # noqa: E402

from tests.polybench import SPECS, make_args  # noqa: E402

KERNELS = ROOT / "tests" / "kernels"
CFLAGS = ("-std=gnu11", "-O3", "-march=native", "-ffp-contract=off", "-fPIC", "-shared", "-w")
FMA_CFLAGS = ("-std=gnu11", "-O3", "-march=native", "-ffp-contract=fast", "-fPIC", "-shared", "-w")
NVCC_FLAGS = ("-arch=sm_90", "-O3", "-Xcompiler", "-fPIC", "-shared")
CPU_RATE = 1e9  # assumed gcc ops/s, only to decide where time steps are cut and what runs first
MAX_TOL = 1e-6
SPREAD_FACTOR = 16.0
VARIANTS = ("default", "naive")
CAND_LABEL = re.compile(r"[A-Za-z0-9_.=x-]+")
"""What may follow ``K.cand-`` in a candidate's file name (it becomes part of file and variant names)."""
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""For the children that draw inputs: the same BLAS threads on both sides, so the same (spd) inputs."""


def stem(kernel: str) -> str:
    """The file stem of a kernel (``fdtd-2d`` -> ``fdtd_2d``)."""
    return kernel.replace("-", "_")


def seed_of(seed: int, kernel: str, label: str) -> np.random.Generator:
    """The input generator for (kernel, size label): the same in the CPU job and the GPU child."""
    return np.random.default_rng([seed, zlib.crc32(kernel.encode()), zlib.crc32(label.encode())])


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------
# Generation (needs the transpiler's front end: run here, or there with the wheels carried)


def generate(kernels: list[str], out: Path) -> dict[str, Any]:
    """Write ``out/K.cu`` and ``out/K.naive.cu`` for each kernel, and ``manifest.json`` (array intents)."""
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"kernels": {}}
    old = out / "manifest.json"
    if old.exists():
        manifest = json.loads(old.read_text())

    def one(k: str, variant: str) -> str:
        dest = out / f"{stem(k)}{'.naive' if variant == 'naive' else ''}.cu"
        cmd = [sys.executable, "-m", "transpile.cli", str(KERNELS / f"{stem(k)}.c"), "-o", str(dest), "--no-verify"]
        proc = subprocess.run(cmd + (["--naive"] if variant == "naive" else []), capture_output=True,
                              text=True, cwd=ROOT, timeout=900)
        return "ok" if proc.returncode == 0 else (proc.stderr or proc.stdout).strip()[-300:]

    with ThreadPoolExecutor(min(8, os.cpu_count() or 2)) as ex:
        done = {(k, v): ex.submit(one, k, v) for k in kernels for v in VARIANTS}
        status = {kv: f.result() for kv, f in done.items()}
    for k in kernels:
        src = KERNELS / f"{stem(k)}.c"
        entry: dict[str, Any] = {v: status[(k, v)] for v in VARIANTS}
        try:
            from transpile import frontend
            from transpile.verify.signature import kernel_sig

            sig = kernel_sig(frontend.load(src).kernels[0])
            entry["intents"] = {a.name: a.intent for a in sig.arrays}
        except Exception as e:  # the manifest is an optimisation: without it every array is compared
            entry["intents_error"] = f"{type(e).__name__}: {e}"
        manifest["kernels"][k] = entry
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def discover(cu_dir: Path, kernels: list[str], *, naive: bool = True
             ) -> tuple[dict[str, dict[str, Path]], list[dict[str, Any]]]:
    """The builds of each kernel (variant -> .cu file): ``default`` (``K.cu``, the "opt" build),
    ``naive`` (``K.naive.cu``) unless ``naive`` is false, then every candidate ``K.cand-<label>.cu``
    as ``cand-<label>`` in label order.  Also ``error`` records (not exceptions: the run goes on with
    the well-named files) for a ``K.cand*.cu`` whose label is not ``[A-Za-z0-9_.=x-]+`` and for a
    ``*.cand-*.cu`` whose stem is no kernel's (``fdtd-2d.cand-x.cu`` for ``fdtd_2d``)."""
    files: dict[str, dict[str, Path]] = {}
    errors: list[dict[str, Any]] = []
    for k in kernels:
        s = stem(k)
        files[k] = {"default": cu_dir / f"{s}.cu"} | ({"naive": cu_dir / f"{s}.naive.cu"} if naive else {})
        for f in sorted(cu_dir.glob(f"{glob.escape(s)}.cand*.cu")):
            head = f"{s}.{R.CAND_PREFIX}"
            label = f.name[len(head):-len(".cu")] if f.name.startswith(head) else None
            if label is None or not CAND_LABEL.fullmatch(label):
                errors.append({"type": "error", "kernel": k, "variant": R.CAND_PREFIX + (label or "?"),
                               "file": f.name, "message": f"bad candidate file name {f.name!r} (ignored): want "
                               f"{s}.cand-<label>.cu, label [A-Za-z0-9_.=x-]+"})
            else:
                files[k][R.CAND_PREFIX + label] = f
    stems = {stem(k) for k in R.SIZES}
    for f in sorted(cu_dir.glob("*.cand*.cu")) if cu_dir.is_dir() else []:
        if f.name.split(".cand", 1)[0] not in stems:
            errors.append({"type": "error", "kernel": "", "variant": R.CAND_PREFIX + "?", "file": f.name,
                           "message": f"candidate file {f.name!r} names no kernel (ignored): want "
                           f"<stem>.cand-<label>.cu, stem as in K.cu (fdtd_2d)"})
    return files, errors


def same_code(files: dict[str, dict[str, Path]]) -> list[dict[str, Any]]:
    """A ``same-code`` record for each kernel whose opt and naive files are byte-identical (nothing
    to optimise was found: a difference in their times is noise, never "slower than naive")."""
    out = []
    for k, builds in files.items():
        opt, naive = builds.get("default"), builds.get("naive")
        if opt and naive and opt.is_file() and naive.is_file() and opt.read_bytes() == naive.read_bytes():
            out.append({"type": "same-code", "kernel": k, "variants": ["default", "naive"]})
    return out


def nvcc_build(cu: Path, dest_dir: Path, *, cubin: bool = False) -> tuple[Path | None, str]:
    """nvcc the file into a shared library (or a cubin, with the ptxas report), cached by content."""
    from transpile.toolchain import nvcc

    exe = nvcc()
    if exe is None:
        return None, "nvcc not found"
    if not cu.exists():
        return None, f"{cu} does not exist"
    flags = ("-arch=sm_90", "-O3", "-cubin", "-Xptxas", "-v") if cubin else NVCC_FLAGS
    key = hashlib.sha256(cu.read_bytes() + " ".join(flags).encode()).hexdigest()[:16]
    dest = dest_dir / f"{cu.stem}-{key}.{'cubin' if cubin else 'so'}"
    logf = dest.with_suffix(dest.suffix + ".log")
    if dest.exists() and logf.exists():
        return dest, logf.read_text()
    dest_dir.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
    proc = subprocess.run([exe, *flags, "-o", str(tmp), str(cu)], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        return None, (proc.stdout + proc.stderr)[-2000:]
    logf.write_text(proc.stdout + proc.stderr)
    os.replace(tmp, dest)
    return dest, proc.stdout + proc.stderr


def ptxas_summary(text: str) -> str:
    """``3k 40r 0B`` from a ptxas -v report: kernels, max registers, max shared bytes, spills."""
    from verify_gpu import resource_summary

    from transpile.toolchain import parse_ptxas

    return resource_summary(parse_ptxas(text))


# ---------------------------------------------------------------------------
# The CPU side: gcc -O3 reference, one process a job


def build_c(kernel: str, flags: tuple[str, ...], work: Path) -> Path:
    src = KERNELS / f"{stem(kernel)}.c"
    key = hashlib.sha256(src.read_bytes() + " ".join(flags).encode()).hexdigest()[:16]
    lib = work / "cpu" / f"lib{stem(kernel)}-{key}.so"
    if not lib.exists():
        lib.parent.mkdir(parents=True, exist_ok=True)
        tmp = lib.with_name(lib.name + f".{os.getpid()}.tmp")
        proc = subprocess.run(["gcc", *flags, "-o", str(tmp), str(src), "-lm"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"gcc failed on {src.name}: {proc.stderr[-500:]}")
        os.replace(tmp, lib)
    return lib


def call_c(kernel: str, lib: Path, args: dict[str, Any]) -> tuple[dict[str, np.ndarray], float]:
    """Run the C kernel on copies of ``args``; (arrays after, seconds)."""
    spec = SPECS[kernel]
    fn = getattr(ctypes.CDLL(str(lib)), spec.function)
    fn.restype = None
    arrays: dict[str, np.ndarray] = {}
    cargs: list[Any] = []
    for p in spec.params:
        if p.kind in ("size", "int"):
            cargs.append(ctypes.c_int(int(args[p.name])))
        elif p.kind == "double":
            cargs.append(ctypes.c_double(float(args[p.name])))
        else:
            arrays[p.name] = np.array(args[p.name], copy=True, order="C")
            cargs.append(arrays[p.name].ctypes.data_as(ctypes.c_void_p))
    t0 = time.perf_counter()
    fn(*cargs)
    return arrays, time.perf_counter() - t0


def outputs_of(kernel: str, intents: dict[str, str] | None) -> list[str]:
    """Arrays to compare: the written ones when the manifest knows, else all."""
    names = [p.name for p in SPECS[kernel].arrays]
    return [n for n in names if intents.get(n, "inout") != "in"] if intents else names


def cpu_job(job: dict[str, Any]) -> dict[str, Any]:
    """One reference run: inputs from the seed, the gcc build timed, outputs saved; the FMA spread if cheap."""
    kernel, label, sizes, work = job["kernel"], job["label"], job["sizes"], Path(job["work"])
    args = make_args(kernel, seed_of(job["seed"], kernel, label), sizes)
    keep = outputs_of(kernel, job.get("intents"))
    out, secs = call_c(kernel, build_c(kernel, CFLAGS, work), args)
    rec: dict[str, Any] = {"type": "cpu", "kernel": kernel, "label": label, "sizes": sizes, "seconds": secs,
                           "cflags": " ".join(CFLAGS[:4])}
    spread = None
    if secs < job.get("spread_cap", 20.0):
        try:
            fma, _ = call_c(kernel, build_c(kernel, FMA_CFLAGS, work), args)
            from transpile.verify.checks import max_rel_error

            spread = max([max_rel_error(fma[n], out[n]) for n in keep if out[n].dtype.kind == "f"] + [0.0])
        except Exception as e:  # a spread is a refinement of the tolerance, not a requirement
            rec["spread_error"] = str(e)[:200]
    rec["spread"] = spread
    ref = work / "ref" / f"{stem(kernel)}.{label}.npz"
    ref.parent.mkdir(parents=True, exist_ok=True)
    tmp = ref.with_name(ref.name + ".tmp.npz")
    np.savez(tmp, **{n: out[n] for n in keep})
    os.replace(tmp, ref)
    ref.with_suffix(".json").write_text(json.dumps(rec))
    return rec


# ---------------------------------------------------------------------------
# The GPU side: one child process a kernel (cupy imported there only)


class Gpu:
    """cupy, the library of one build, and the timing loop."""

    def __init__(self) -> None:
        import cupy as cp

        self.cp = cp
        self.stream = cp.cuda.Stream(non_blocking=True)
        self.flush_buf = cp.empty(256 << 20, dtype=cp.uint8)

    def device_name(self) -> str:
        props = self.cp.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def flush(self) -> None:
        self.flush_buf.fill(0)  # on the current stream (ours inside `with self.stream`)

    def time(self, call: Any, *, before: Any = None, warmup: int, iters: int, budget_s: float) -> list[float]:
        """Median-ready samples (ms) of ``call()``: ``before()`` and an L2 flush outside each timed region."""
        cp = self.cp
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        samples: list[float] = []
        start = time.perf_counter()
        least = 3  # samples taken even past the budget
        with self.stream:
            for i in range(warmup + iters):
                if before is not None:
                    before(i)
                self.flush()
                self.stream.synchronize()
                e0.record(self.stream)
                call(i)
                e1.record(self.stream)
                e1.synchronize()
                ms = cp.cuda.get_elapsed_time(e0, e1)
                if i == 0 and ms * 1e-3 > budget_s / 4:  # one call eats the budget: it is the only sample
                    samples.append(ms)
                    break
                if i >= warmup:
                    samples.append(ms)
                if len(samples) >= least and time.perf_counter() - start > budget_s:
                    break
        return samples

    def time_round_robin(self, calls: dict[str, Any], *, before: Any = None, warmup: int, iters: int,
                         budget_s: float) -> dict[str, list[float]]:
        """``time`` for several builds at once, one sample of each per round (each round starts one
        build further on): whatever drifts over the child (clocks, power, the host) reaches every
        build alike.  ``budget_s`` is the whole group's; ``before(i)`` runs before every call of
        round ``i``, so each build gets restored inputs."""
        cp = self.cp
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        names = list(calls)
        samples: dict[str, list[float]] = {v: [] for v in names}
        start = time.perf_counter()
        least = 3  # samples of each taken even past the budget
        with self.stream:
            for i in range(warmup + iters):
                got = {}
                for v in names[i % len(names):] + names[:i % len(names)]:
                    if before is not None:
                        before(i)
                    self.flush()
                    self.stream.synchronize()
                    e0.record(self.stream)
                    calls[v](i)
                    e1.record(self.stream)
                    e1.synchronize()
                    got[v] = cp.cuda.get_elapsed_time(e0, e1)
                if i == 0 and sum(got.values()) * 1e-3 > budget_s / 4:  # one round eats the budget
                    return {v: [got[v]] for v in names}
                if i >= warmup:
                    for v in names:
                        samples[v].append(got[v])
                if i + 1 - warmup >= least and time.perf_counter() - start > budget_s:
                    break
        return samples


class Build:
    """One loaded ``K_device``: a ctypes call on device arrays."""

    def __init__(self, kernel: str, lib: Path) -> None:
        self.spec = SPECS[kernel]
        self.lib = ctypes.CDLL(str(lib), mode=os.RTLD_LOCAL)
        self.fn = self.lib[f"{self.spec.function}_device"]
        types: list[Any] = []
        for p in self.spec.params:
            types.append({"size": ctypes.c_int, "int": ctypes.c_int, "double": ctypes.c_double}.get(p.kind,
                                                                                                   ctypes.c_void_p))
        self.fn.argtypes = [*types, ctypes.c_void_p]
        self.fn.restype = ctypes.c_int

    def __call__(self, scalars: dict[str, Any], arrays: dict[str, Any], stream: Any) -> int:
        vals: list[Any] = []
        for p in self.spec.params:
            if p.kind == "array":
                vals.append(ctypes.c_void_p(arrays[p.name].data.ptr))
            elif p.kind == "double":
                vals.append(ctypes.c_double(float(scalars[p.name])))
            else:
                vals.append(ctypes.c_int(int(scalars[p.name])))
        return int(self.fn(*vals, ctypes.c_void_p(stream.ptr)))


def _emit(path: Path, rec: dict[str, Any]) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(rec, default=str) + "\n")


def _cublas_call(kernel: str, arrs: dict[str, Any], cp: Any) -> Any:
    """cupy.matmul on the kernel's own arrays: the product(s) it computes, as cuBLAS would."""
    if kernel == "gemm":
        return lambda: cp.matmul(arrs["A"], arrs["B"], out=arrs["C"])
    if kernel == "2mm":
        return lambda: (cp.matmul(arrs["A"], arrs["B"], out=arrs["tmp"]),
                        cp.matmul(arrs["tmp"], arrs["C"], out=arrs["D"]))
    if kernel == "3mm":
        return lambda: (cp.matmul(arrs["A"], arrs["B"], out=arrs["E"]), cp.matmul(arrs["C"], arrs["D"], out=arrs["F"]),
                        cp.matmul(arrs["E"], arrs["F"], out=arrs["G"]))
    if kernel == "syrk":  # the full product: twice syrk's flops
        return lambda: cp.matmul(arrs["A"], arrs["A"].T, out=arrs["C"])
    raise KeyError(kernel)


def gpu_child(job: dict[str, Any]) -> int:
    """All GPU work for one kernel; records appended to ``job['records']`` as they come."""
    kernel, out = job["kernel"], Path(job["records"])
    deadline = time.perf_counter() + job["budget_s"]
    gpu = Gpu()
    cp = gpu.cp
    spec = SPECS[kernel]
    builds = {}
    for variant, lib in job["libs"].items():
        try:
            builds[variant] = Build(kernel, Path(lib))
        except (OSError, AttributeError) as e:
            _emit(out, {"type": "error", "kernel": kernel, "variant": variant, "message": f"load: {e}"})
    timed_builds = dict(builds)
    if job.get("baseline"):  # opt's library again, timed only (opt's own child checked it)
        try:
            timed_builds = {R.BASELINE: Build(kernel, Path(job["baseline"]))} | builds
        except (OSError, AttributeError) as e:
            _emit(out, {"type": "error", "kernel": kernel, "variant": R.BASELINE, "message": f"load: {e}"})
    work = Path(job["work"])
    timed = list(job["timed"].items())
    configs = timing_configs(kernel, [label for label, _ in timed], len(timed_builds), job.get("cublas", True))
    state = {"done": 0, "configs": configs, "deadline": deadline}
    # The opt build is checked and timed before naive is even run: a naive build too slow for the
    # time share (symm, nussinov and seidel-2d at EXTRALARGE) must not cost opt its timing.  A
    # candidates' child times its builds round-robin with the baseline, so it checks them all first.
    if job.get("baseline") or "default" not in builds:
        groups = [(builds, timed_builds, job.get("cublas", True))]
    else:
        groups = [({v: b}, {v: b}, job.get("cublas", True) and v == "default") for v, b in builds.items()]
    for checked, timed_here, cublas in groups:
        rc = _check_builds(gpu, kernel, spec, checked, job, work, out)
        if rc:
            return rc
        cp.get_default_memory_pool().free_all_blocks()
        for label, sizes in timed:
            try:
                _time_size(gpu, kernel, label, sizes, timed_here, {**job, "cublas": cublas}, out, state)
                cp.get_default_memory_pool().free_all_blocks()
            except Exception as e:  # noqa: BLE001 - reported; the parent goes on with the next kernel
                _emit(out, {"type": "error", "kernel": kernel, "label": label,
                            "message": f"timing: {type(e).__name__}: {e}"[:300]})
                return 2
    return 0


def _check_builds(gpu: Gpu, kernel: str, spec: Any, builds: dict[str, Build], job: dict[str, Any], work: Path,
                  out: Path) -> int:
    """Correctness runs: every check size, each of ``builds``; outputs saved for the parent's
    comparison.  2 when a CUDA error poisoned the context (reported), else 0."""
    cp = gpu.cp
    for label, sizes in job["checks"].items():
        args = make_args(kernel, seed_of(job["seed"], kernel, label), sizes)
        keep = outputs_of(kernel, job.get("intents"))
        host = {p.name: args[p.name] for p in spec.arrays}
        for variant, b in builds.items():
            t0 = time.perf_counter()
            rec: dict[str, Any] = {"type": "gpu-run", "kernel": kernel, "variant": variant, "label": label,
                                   "sizes": sizes}
            try:
                with gpu.stream:
                    dev = {n: cp.asarray(a) for n, a in host.items()}
                    # A copy from pageable memory may return before its DMA lands, and a non-blocking
                    # stream does not wait for the legacy one: settle the device (as gpu_worker does).
                    cp.cuda.runtime.deviceSynchronize()
                    ret = b(args, dev, gpu.stream)
                    gpu.stream.synchronize()
                    res = {n: cp.asnumpy(dev[n]) for n in keep}
                    clobbered = [n for n in host if n not in keep
                                 and not np.array_equal(cp.asnumpy(dev[n]).view(np.uint8),
                                                        np.ascontiguousarray(host[n]).view(np.uint8))]
                    del dev
                cp.cuda.runtime.deviceSynchronize()
                rec.update(ret=ret, clobbered=clobbered, seconds=time.perf_counter() - t0)
                if ret == 0:
                    dest = work / "gpu" / f"{stem(kernel)}.{label}.{variant}.npz"
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    np.savez(dest, **res)
                    rec["file"] = str(dest)
            except Exception as e:  # a CUDA error poisons the context: report and stop this kernel
                rec.update(error=f"{type(e).__name__}: {e}"[:300])
                _emit(out, rec)
                return 2
            _emit(out, rec)
    return 0


def timing_configs(kernel: str, labels: list[str], builds: int, cublas: bool = True) -> int:
    """How many timings a GPU child makes (each gets an even share of what is left of its budget):
    every build at every timed size, and cuBLAS at EX for the matmul-like kernels when the child
    times it (the opt/naive child does, a candidates child does not)."""
    return sum(builds + (cublas and kernel in R.MATMUL_LIKE and label == "EX") for label in labels) or 1


def _time_size(gpu: Gpu, kernel: str, label: str, sizes: dict[str, int], builds: dict[str, Build],
               job: dict[str, Any], out: Path, state: dict[str, Any]) -> None:
    """Time every build (and cuBLAS) of ``kernel`` at ``sizes``: one ``time`` record each; one build
    after another, or round-robin (``Gpu.time_round_robin``) when the job times the baseline."""
    cp = gpu.cp
    spec = SPECS[kernel]
    args = make_args(kernel, seed_of(job["seed"], kernel, "time-" + label), sizes)
    mutated = outputs_of(kernel, job.get("intents"))
    with gpu.stream:
        pristine = {p.name: cp.asarray(args[p.name]) for p in spec.arrays}
        cp.cuda.runtime.deviceSynchronize()  # the uploads (see the correctness runs)
        sets = [{n: a.copy() for n, a in pristine.items()} for _ in range(job["sets"])]
        gpu.stream.synchronize()

    def restore(i: int) -> None:
        for n in mutated:
            sets[i % len(sets)][n][...] = pristine[n]

    variants: list[tuple[str, Build | None]] = list(builds.items())
    if job.get("cublas", True) and kernel in R.MATMUL_LIKE and label == "EX":
        variants.append(("cublas", None))
    calls: dict[str, Any] = {}
    rets: dict[str, list[int]] = {}
    for variant, b in variants:
        rets[variant] = []
        if b is None:
            cublas = [_cublas_call(kernel, s, cp) for s in sets]

            def call(i: int, cublas: list[Any] = cublas) -> None:
                cublas[i % len(cublas)]()
        else:
            def call(i: int, b: Build = b, rets: list[int] = rets[variant]) -> None:
                rets.append(b(args, sets[i % len(sets)], gpu.stream))
        calls[variant] = call

    def share(n: int) -> float:
        """The next ``n`` timings' part of what is left of the child's budget."""
        return n * max(1.0, (state["deadline"] - time.perf_counter()) / max(1, state["configs"] - state["done"]))

    def emit(variant: str, samples: list[float], round_robin: bool) -> None:
        bad = [r for r in rets[variant] if r]
        rec = {"type": "time", "kernel": kernel, "variant": variant, "label": label, "sizes": sizes,
               "ms": statistics.median(samples) if samples and not bad else None,
               "min_ms": min(samples) if samples else None, "samples": len(samples),
               "spread_pct": (100 * (max(samples) - min(samples)) / statistics.median(samples)
                              if len(samples) > 1 else None),
               "flops": R.flops(kernel, sizes), "bytes": R.nbytes(kernel, sizes)}
        if round_robin:
            rec["round_robin"] = True
        if bad:
            rec["error"] = f"{spec.function}_device returned {bad[0]}"
        _emit(out, rec)

    if R.BASELINE in builds:  # the candidates' child: every build under the baseline's conditions
        got = gpu.time_round_robin(calls, before=restore, warmup=job["warmup"], iters=job["iters"],
                                   budget_s=share(len(calls)))
        cp.cuda.runtime.deviceSynchronize()
        state["done"] += len(calls)
        for variant, samples in got.items():
            emit(variant, samples, True)
        return
    for variant, call in calls.items():  # each record out as soon as it is taken: a later fault keeps it
        samples = gpu.time(call, before=restore, warmup=job["warmup"], iters=job["iters"], budget_s=share(1))
        cp.cuda.runtime.deviceSynchronize()
        state["done"] += 1
        emit(variant, samples, False)


def _copy_bandwidth(gpu: Gpu, iters: int) -> tuple[float, int, int]:
    """(median ms, samples, bytes) of a 1 GiB device-to-device cudaMemcpy."""
    cp = gpu.cp
    n = 1 << 30
    src, dst = cp.empty(n, dtype=cp.uint8), cp.empty(n, dtype=cp.uint8)
    src.fill(1)
    d2d = cp.cuda.runtime.memcpyDeviceToDevice

    def copy(i: int) -> None:
        cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, n, d2d, gpu.stream.ptr)

    cs = gpu.time(copy, warmup=3, iters=iters, budget_s=10)
    return statistics.median(cs), len(cs), n


def _dgemm(gpu: Gpu, m: int, k: int, nn: int, iters: int) -> dict[str, Any]:
    """cupy.matmul (cuBLAS DGEMM) of random (m x k) @ (k x nn), 3 rotated sets."""
    cp = gpu.cp
    rng = np.random.default_rng(0)
    sets = [(cp.asarray(rng.uniform(-1, 1, (m, k))), cp.asarray(rng.uniform(-1, 1, (k, nn))),
             cp.empty((m, nn))) for _ in range(3)]
    cp.cuda.runtime.deviceSynchronize()

    def mm(i: int) -> None:
        a, b, c = sets[i % 3]
        cp.matmul(a, b, out=c)

    ts = gpu.time(mm, warmup=3, iters=iters, budget_s=10)
    ms = statistics.median(ts)
    return {"shape": f"{m}x{k}x{nn}", "ms": ms, "flops_per_s": 2 * m * k * nn / (ms * 1e-3), "samples": len(ts)}


def fake_child(kind: str, job: dict[str, Any]) -> int:
    """``BENCH_FAKE_GPU=1``: stand-ins for the GPU children, so the parent's scheduling, comparisons and
    tables run on a machine without a GPU (tests, a rehearsal).  The "GPU" result is the gcc build's;
    the times are the model's floor at 4 TB/s and 50 TFLOP/s, times ``BENCH_FAKE_DRIFT`` (environment,
    default 1) in a child that times candidates: the drift between children that the baseline is
    there to cancel.  Nothing here is a measurement."""
    out = Path(job["records"])
    if kind == "calibrate":
        _emit(out, {"type": "device", "device": "FAKE (BENCH_FAKE_GPU=1)", "date": "fake",
                    "copy_bytes_per_s": 4.0e12, "dgemm": [{"shape": "4096x4096x4096", "flops_per_s": 5.0e13}]})
        return 0
    kernel, work = job["kernel"], Path(job["work"])
    knobs = {}  # a build's .cu may steer its stand-in: BENCH_FAKE_WRONG (outputs off), BENCH_FAKE_SLOW=<x floor>
    variants = [R.BASELINE] * bool(job.get("baseline")) + list(job["libs"])
    for variant in variants:
        src = Path(job.get("sources", {}).get(variant, "/nonexistent"))
        text = src.read_text(errors="replace") if src.is_file() else ""
        slow = re.search(r"BENCH_FAKE_SLOW=([0-9.]+)", text)
        knobs[variant] = ("BENCH_FAKE_WRONG" in text,
                          float(slow.group(1)) if slow else {"default": 1.5, "naive": 6.0}.get(variant, 1.5))
    drift = float(os.environ.get("BENCH_FAKE_DRIFT", "1")) if any(map(R.is_candidate, job["libs"])) else 1.0
    for label, sizes in job["checks"].items():
        args = make_args(kernel, seed_of(job["seed"], kernel, label), sizes)
        res, _ = call_c(kernel, build_c(kernel, CFLAGS, work), args)
        for variant in job["libs"]:
            dest = work / "gpu" / f"{stem(kernel)}.{label}.{variant}.npz"
            dest.parent.mkdir(parents=True, exist_ok=True)
            wrong = knobs[variant][0]
            np.savez(dest, **{n: (res[n] * 1.01 + 1.0 if wrong and res[n].dtype.kind == "f" else res[n])
                              for n in outputs_of(kernel, job.get("intents"))})
            _emit(out, {"type": "gpu-run", "kernel": kernel, "variant": variant, "label": label, "sizes": sizes,
                        "ret": 0, "clobbered": [], "file": str(dest)})
    for label, sizes in job["timed"].items():
        floor = max(R.nbytes(kernel, sizes) / 4e12, R.flops(kernel, sizes) / 5e13) * 1e3
        slows = [(v, knobs[v][1]) for v in variants]
        if job.get("cublas", True) and kernel in R.MATMUL_LIKE and label == "EX":
            slows.append(("cublas", 1.2))
        for variant, slow in slows:
            _emit(out, {"type": "time", "kernel": kernel, "variant": variant, "label": label, "sizes": sizes,
                        "ms": floor * slow * drift, "samples": job["iters"]}
                  | ({"round_robin": True} if job.get("baseline") else {}))
    return 0


def calibrate(job: dict[str, Any]) -> int:
    """Copy bandwidth (1 GiB cudaMemcpy D2D) and cuBLAS DGEMM rates; one ``device`` record."""
    gpu = Gpu()
    cp = gpu.cp
    copy_ms, copy_n, n = _copy_bandwidth(gpu, job["iters"])
    cp.get_default_memory_pool().free_all_blocks()
    dgemm = [_dgemm(gpu, *shape, job["iters"]) for shape in ((1000, 1200, 1100), (2000, 2600, 2300),
                                                             (4096, 4096, 4096))]
    _emit(Path(job["records"]), {
        "type": "device", "device": gpu.device_name(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "copy_ms": copy_ms, "copy_bytes_per_s": 2 * n / (copy_ms * 1e-3), "copy_samples": copy_n, "dgemm": dgemm,
        "cupy": cp.__version__, "cuda_runtime": cp.cuda.runtime.runtimeGetVersion()})
    return 0



# ---------------------------------------------------------------------------
# The parent: plan, schedule, compare, write


def _child(kind: str, job: dict[str, Any], timeout: float, work: Path, *, single_thread: bool = False,
           tag: str = "") -> tuple[int, str]:
    jf = work / f"job-{kind}-{job.get('kernel', 'device')}{tag}.json"
    jf.write_text(json.dumps(job))
    logf = work / f"log-{kind}-{job.get('kernel', 'device')}{tag}.txt"
    with open(logf, "w") as lf:
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), f"--_{kind}", str(jf)],
                                stdout=lf, stderr=subprocess.STDOUT, cwd=ROOT,
                                env={**os.environ, **(ONE_THREAD if single_thread else {})})
        try:
            rc = proc.wait(timeout=max(5.0, timeout))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = -9
    return rc, logf.read_text(errors="replace")[-600:]


def share_of(left: float, weights: list[int]) -> float:
    """Seconds for the next GPU child: ``left`` split over the children still to run (``weights[0]`` is
    the next one's) in proportion to their builds, at least 8 s.  Every build is checked and timed at
    the same sizes, so a kernel's candidates need time of their own; with no candidates every kernel
    has the same builds and this is the even split per kernel."""
    return max(8.0, left * weights[0] / max(1, sum(weights)))


class CpuPool:
    """Runs reference jobs as child processes, ``n`` at a time, longest first, until a deadline."""

    def __init__(self, jobs: list[dict[str, Any]], n: int, work: Path, deadline: float, on_done: Any) -> None:
        self.on_done = on_done  # called with each job's ``cpu`` record as it finishes (or fails)
        self.todo = sorted(jobs, key=lambda j: -j["est_s"])
        self.n, self.work, self.deadline = n, work, deadline
        self.running: dict[str, tuple[subprocess.Popen[bytes], dict[str, Any]]] = {}
        self.finished: dict[str, dict[str, Any]] = {}
        self.reported: set[str] = set()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while self.todo or self.running:
            with self.lock:
                for key, (proc, job) in list(self.running.items()):
                    rc = proc.poll()
                    if rc is not None:
                        del self.running[key]
                        meta = self.work / "ref" / f"{stem(job['kernel'])}.{job['label']}.json"
                        self.finished[key] = (json.loads(meta.read_text()) if rc == 0 and meta.exists() else
                                              {"type": "cpu", "kernel": job["kernel"], "label": job["label"],
                                               "sizes": job["sizes"], "seconds": None, "error": f"exit {rc}"})
                    elif time.monotonic() > self.deadline:
                        proc.kill()
                        proc.wait()
                        del self.running[key]
                        self.finished[key] = {"type": "cpu", "kernel": job["kernel"], "label": job["label"],
                                              "sizes": job["sizes"], "seconds": None,
                                              "error": "not finished within the time budget"}
                for key in set(self.finished) - self.reported:
                    self.reported.add(key)
                    self.on_done(self.finished[key])
                while self.todo and len(self.running) < self.n and time.monotonic() < self.deadline:
                    job = self.todo.pop(0)
                    jf = self.work / f"cpujob-{stem(job['kernel'])}.{job['label']}.json"
                    jf.write_text(json.dumps(job))
                    lf = open(self.work / f"cpulog-{stem(job['kernel'])}.{job['label']}.txt", "w")
                    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--_cpu", str(jf)],
                                            stdout=lf, stderr=subprocess.STDOUT, cwd=ROOT,
                                            env={**os.environ, **ONE_THREAD})
                    self.running[f"{job['kernel']}.{job['label']}"] = (proc, job)
                if self.todo and time.monotonic() >= self.deadline:
                    for job in self.todo:
                        self.finished[f"{job['kernel']}.{job['label']}"] = {
                            "type": "cpu", "kernel": job["kernel"], "label": job["label"], "sizes": job["sizes"],
                            "seconds": None, "error": "not started within the time budget"}
                    self.todo = []
            time.sleep(0.2)
        with self.lock:
            for key in set(self.finished) - self.reported:
                self.reported.add(key)
                self.on_done(self.finished[key])

    def result(self, key: str, wait_until: float) -> dict[str, Any] | None:
        while time.monotonic() < wait_until:
            with self.lock:
                if key in self.finished:
                    return self.finished[key]
            time.sleep(0.5)
        with self.lock:
            return self.finished.get(key)

    def stop(self) -> None:
        self.deadline = 0.0
        self.thread.join(timeout=30)


def compare_run(kernel: str, label: str, variant: str, gpu_file: str, cpu: dict[str, Any] | None,
                work: Path, sizes: dict[str, int] | None = None) -> dict[str, Any]:
    """A ``check`` record: the GPU outputs against the reference's, under the verifier's tolerance."""
    from transpile.verify.checks import compare, tolerance

    rec: dict[str, Any] = {"type": "check", "kernel": kernel, "label": label, "variant": variant,
                           "sizes": sizes or {}}
    if cpu is None or cpu.get("seconds") is None:
        rec.update(verdict="no-ref", message=(cpu or {}).get("error", "the reference did not finish"))
        Path(gpu_file).unlink(missing_ok=True)
        return rec
    sizes = cpu["sizes"]
    rec["sizes"] = sizes
    ref = np.load(work / "ref" / f"{stem(kernel)}.{label}.npz")
    got = np.load(gpu_file)
    d = R.depth(kernel, sizes)
    spread = cpu.get("spread")
    worst, verdict, msgs = 0.0, "pass", []
    for name in ref.files:
        r, c = ref[name], got[name]
        base = tolerance(r.dtype, d)
        widen = max(1.0, SPREAD_FACTOR * spread / base) if spread and base else 1.0
        tol = min(tolerance(r.dtype, d, widen), MAX_TOL) if r.dtype.kind == "f" else 0.0
        never = np.full_like(r, np.nan) if r.dtype.kind == "f" else np.full_like(r, np.iinfo(r.dtype).min)
        cmp = compare(name, c, r, never, tol)
        worst = max(worst, cmp.max_err / tol if tol else (0.0 if cmp.ok else float("inf")))
        if not cmp.ok:
            unsure = spread is None and cmp.kind == "precision" and cmp.max_err <= MAX_TOL
            verdict = "precision?" if unsure and verdict != "FAIL" else "FAIL"  # FAIL only if one output fails
            msgs.append(cmp.message())
    rec.update(verdict=verdict, err_over_tol=worst, spread=spread, depth=d, message="; ".join(msgs)[:400])
    del got
    Path(gpu_file).unlink(missing_ok=True)  # the scratch disk holds a few GB of these at most
    return rec



def plan(kernels: list[str], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Per kernel: sizes to check (labels -> sizes) and to time."""
    out = {}
    for k in kernels:
        sz = R.plan_sizes(k)
        cap = min(args.cpu_cap, 20.0) if args.quick else args.cpu_cap
        checks = {"EX": R.reduced_steps(k, sz["EX"], cap, CPU_RATE), "off1": sz["off1"], "off2": sz["off2"]}
        timed = {"EX": sz["EX"]}
        if "BIG" in sz and not args.quick:
            checks["BIG"] = timed["BIG"] = sz["BIG"]
        if args.quick:
            checks.pop("off1")
        out[k] = {"checks": checks, "timed": timed}
    return out


def write_outputs(records: list[dict[str, Any]], out: Path, name: str, args: argparse.Namespace,
                  final: bool = False) -> str:
    rs = R.rows(records)
    ceil = R.ceilings(records)
    table = R.markdown_table(rs, ceil)
    summ = R.summary(rs, ceil)
    cands = R.candidates_table(records)
    cand_lines = ["## Candidates", "",
                  "Every `K.cand-<label>.cu` of `--cu-dir`, built, checked and timed as opt (`K.cu`) is, in a GPU "
                  "child of its own after opt's; that child also times opt's library again (opt-again, variant "
                  f"`{R.BASELINE}`), round-robin with the candidates sample by sample. EX ms: the median at "
                  "EXTRALARGE; 'vs opt': the baseline's time over the build's, the baseline named by 'against': "
                  f"`{R.SAME_CHILD}` (same child: the one to trust) or `{R.OTHER_CHILD}` (opt's row; used only "
                  "where no opt-again was timed, and biased by the drift between children); opt-again's own 'vs "
                  "opt' is that drift (opt's time over it). 'check (worst)': its worst verdict over the "
                  "kernel's check sizes ('-': not checked at one); 'fastest passing': the build with the best "
                  "'vs opt' (opt 1x) that passed every check.", "",
                  cands, ""] if cands else []
    order = {k: i for i, k in enumerate(R.SIZES)}
    checks = sorted((r for r in records if r.get("type") == "check"),
                    key=lambda c: (order.get(c["kernel"], 99), c["label"], c["variant"]))
    check_lines = ["| kernel | size | variant | sizes | verdict | max err / tol | note |", "|---|---|---|---|---|---|---|"]
    for c in checks:
        check_lines.append(f"| {c['kernel']} | {c['label']} | {c['variant']} | {R.size_text(c.get('sizes', {}))} | "
                           f"{c['verdict']} | {c.get('err_over_tol', 0):.3g} | "
                           f"{str(c.get('message', '')).replace('|', '/')[:160]} |")
    dev = next((r for r in reversed(records) if r.get("type") == "device"), {})
    calib = "- Calibration: " + (", ".join(
        f"DGEMM {d['shape']} {d['flops_per_s'] / 1e12:.1f} TFLOP/s ({d.get('samples', '?')} samples)"
        for d in dev.get("dgemm", []) if d.get("flops_per_s"))
        + (f"; 1 GiB D2D copy {dev['copy_ms']:.3f} ms" if dev.get("copy_ms") else "")
        + (f"; cupy {dev.get('cupy')}, CUDA runtime {dev.get('cuda_runtime')}" if dev.get("cupy") else "")
        ) if dev else "- Calibration: not recorded"
    text = "\n".join([
        f"# GPU benchmark: {ceil.device or 'GPU'}, {ceil.date or datetime.date.today().isoformat()}",
        "", "Generated by `bench/gpu.py`" + (" (partial: still running)" if not final else "")
        + f"; command: `{' '.join(sys.argv)}`.", "",
        summ, calib, "",
        "Timing: CUDA events around `K_device` on a non-blocking stream, synchronised before each call; input "
        f"sets rotated over {args.sets} device copies, restored from a pristine copy and the L2 flushed (256 MB "
        "memset) outside the timed region; median of the samples column (target "
        f"{args.iters} after {args.warmup} warm-up). 'vs gcc -O3 1 core': gcc {' '.join(CFLAGS[:4])} on one core, "
        "taken while other references ran on other cores; '(est)' scaled from a smaller run by the flop model "
        "(time steps cut, or the full run did not finish in the budget). '% of roof': of the measured copy "
        "bandwidth for memory-bound rows (mem), of the best measured cuBLAS DGEMM for the others (fp64). "
        "'vs cuBLAS': cuBLAS time / ours (cupy.matmul on the same arrays; syrk's is the full A A^T, twice "
        "the flops). Correctness: pass, FAIL, precision? (within 1e-6 but over a tolerance whose FMA spread "
        "was not measured), no-ref (the CPU reference did not finish), '-' (not run).", "",
        table, "", *cand_lines, "## Correctness runs", "", *check_lines, "",
        "## The bytes and flop model (bench/roofline.py)", "", R.model_table(), ""])
    (out / f"{name}.md").write_text(text)
    return table + "\n\n" + summ + ("\n\n" + cands if cands else "")


def run(args: argparse.Namespace) -> int:
    t_start = time.monotonic()
    deadline = t_start + args.budget
    kernels = R.parse_kernels(args.kernels)
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-gpu-"))
    work.mkdir(parents=True, exist_ok=True)
    records_path = out / f"{args.name}.jsonl"
    records_path.write_text("")
    records: list[dict[str, Any]] = []
    lock = threading.Lock()

    def add(rec: dict[str, Any]) -> None:
        with lock:
            records.append(rec)
            _emit(records_path, rec)

    cu_dir = args.cu_dir or work / "cu"
    manifest: dict[str, Any] = {}
    missing = [k for k in kernels if not (cu_dir / f"{stem(k)}.cu").exists()
               or not (args.skip_naive or (cu_dir / f"{stem(k)}.naive.cu").exists())]
    if missing:
        log(f"generating .cu for {len(missing)} kernel(s) into {cu_dir}")
        manifest = generate(missing, cu_dir)
    if (cu_dir / "manifest.json").exists():
        manifest = json.loads((cu_dir / "manifest.json").read_text())
    intents = {k: manifest.get("kernels", {}).get(k, {}).get("intents") for k in kernels}
    p = plan(kernels, args)
    # CPU references: every check size (the EX one also gives the gcc time).
    cpu_jobs = [{"kernel": k, "label": label, "sizes": sizes, "seed": args.seed, "work": str(work),
                 "intents": intents[k], "est_s": R.flops(k, sizes) / CPU_RATE, "spread_cap": args.spread_cap}
                for k in kernels for label, sizes in p[k]["checks"].items()]
    pool = CpuPool(cpu_jobs, args.cpu_jobs, work, deadline - 20, add)
    log(f"{len(cpu_jobs)} CPU reference job(s) started ({args.cpu_jobs} at a time)")
    files, bad_names = discover(cu_dir, kernels, naive=not args.skip_naive)
    for rec in bad_names:
        add(rec)
    for rec in same_code(files):
        add(rec)
    builds = ThreadPoolExecutor(max(1, args.build_jobs))
    futs = {(k, v): builds.submit(nvcc_build, cu, work / "so") for k in kernels for v, cu in files[k].items()}
    compares = ThreadPoolExecutor(8)  # mostly waiting for their reference
    pending: list[Any] = []
    rc, tail = _child("calibrate", {"records": str(work / "records-device.jsonl"), "iters": args.iters}, 120, work)
    for line in (work / "records-device.jsonl").read_text().splitlines() if (work / "records-device.jsonl").exists() else []:
        add(json.loads(line))
    if rc:
        add({"type": "error", "kernel": "", "message": f"calibration failed (exit {rc}): {tail}"})
    # One GPU child for opt (and naive), then one for the kernel's candidates, if any: a candidate that
    # poisons its CUDA context cannot take opt's timings down with it.  The candidates' child also times
    # opt's library again (R.BASELINE), round-robin with them: their speedups are over that time.
    groups = [(k, vs, cand) for k in kernels for cand in (False, True)
              if (vs := [v for v in files[k] if R.is_candidate(v) == cand])]

    def collect(k: str, recf: Path, cand: bool) -> None:
        """The child's records: GPU outputs off to the comparison pool, the rest straight in (a candidates
        child's errors all count against the candidates, never against opt's row)."""
        for line in recf.read_text().splitlines() if recf.exists() else []:
            rec = json.loads(line)
            if cand and rec["type"] == "error" and not R.candidates_side(rec.get("variant")):
                rec["variant"] = R.CAND_PREFIX + "*"
            if rec["type"] == "gpu-run":
                if rec.get("file"):
                    key = f"{k}.{rec['label']}"
                    pending.append(compares.submit(
                        lambda k=k, rec=rec, key=key: add(compare_run(k, rec["label"], rec["variant"], rec["file"],
                                                                      pool.result(key, deadline - 10), work,
                                                                      rec["sizes"]))))
                else:
                    add({"type": "check", "kernel": k, "label": rec["label"], "variant": rec["variant"],
                         "sizes": rec["sizes"], "verdict": "FAIL",
                         "message": rec.get("error") or f"returned {rec.get('ret')}"})
                if rec.get("clobbered"):
                    add({"type": "error", "kernel": k, "variant": rec["variant"],
                         "message": f"{rec['variant']} modified input(s) {rec['clobbered']}"})
            else:
                add(rec)

    t0 = time.monotonic()
    for i, (k, vs, cand) in enumerate(groups):
        libs = {}
        for v in vs:
            lib, msg = futs[(k, v)].result()
            if lib is None:
                add({"type": "error", "kernel": k, "variant": v, "message": f"nvcc: {msg.strip()[-200:]}"})
            else:
                libs[v] = str(lib)
        if libs:
            left = deadline - time.monotonic() - args.reserve
            share = share_of(left, [len(g[1]) + g[2] for g in groups[i:]])  # + the baseline's timing
            tag = ".cand" if cand else ""
            recf = work / f"records-{stem(k)}{tag}.jsonl"
            recf.unlink(missing_ok=True)
            opt_lib = futs[(k, "default")].result()[0] if cand else None  # done: opt's child ran before
            sources = {v: str(files[k][v]) for v in libs} | ({R.BASELINE: str(files[k]["default"])} if opt_lib else {})
            job = {"kernel": k, "libs": libs, "sources": sources, "cublas": not cand,
                   "baseline": str(opt_lib) if opt_lib else None,
                   "checks": p[k]["checks"], "timed": p[k]["timed"], "seed": args.seed, "work": str(work),
                   "records": str(recf), "intents": intents[k], "budget_s": share * 0.8, "iters": args.iters,
                   "warmup": args.warmup, "sets": args.sets}
            crc, tail = _child("gpu", job, share * 1.5 + 30, work, single_thread=True, tag=tag)
            collect(k, recf, cand)
            if crc:
                why = (f"killed after its time share ({share * 1.5 + 30:.0f} s)" if crc == -9
                       else f"GPU child exit {crc}: {tail.strip()[-200:]}")
                add({"type": "error", "kernel": k, "message": why}
                    | ({"variant": R.CAND_PREFIX + "*", "message": "candidates child: " + why} if cand else {}))
        if i + 1 == len(groups) or groups[i + 1][0] != k:  # the kernel's last child
            ms = {r["variant"]: r.get("ms") for r in records if r.get("type") == "time" and r["kernel"] == k
                  and r["label"] == "EX"}
            log(f"{k:15} {time.monotonic() - t0:5.1f} s  EX ms: {ms}  (budget left {deadline - time.monotonic():.0f} s)")
            t0 = time.monotonic()
        write_outputs(records, out, args.name, args)
    log("GPU work done; waiting for comparisons and CPU references")
    for f in pending:
        try:
            f.result(timeout=max(5.0, deadline + 30 - time.monotonic()))
        except Exception as e:  # noqa: BLE001 - a comparison problem is a row note, not a crash
            add({"type": "error", "kernel": "", "message": f"compare: {e}"})
    pool.stop()
    builds.shutdown(wait=False, cancel_futures=True)
    compares.shutdown(wait=False, cancel_futures=True)
    table = write_outputs(records, out, args.name, args, final=True)
    if args.plot:
        try:
            plot_from(records_path, out, args.name)
        except Exception as e:  # noqa: BLE001 - the table is written; the picture can be drawn later
            log(f"plot failed ({type(e).__name__}: {e}); run --plot-from {records_path}")
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)  # GBs of saved outputs
    print(table)
    log(f"wrote {out / (args.name + '.md')} and {records_path} in {time.monotonic() - t_start:.0f} s")
    return 0


def merge_records(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The records of several runs as one: a kernel's records come from the last run that has any
    (a later run of a kernel replaces all of its earlier rows, checks and candidates); every run's
    device calibration is kept (the last one sets the table's ceilings, as in one run)."""
    owner = {r["kernel"]: i for i, run in enumerate(runs) for r in run if "kernel" in r}
    return [r for i, run in enumerate(runs) for r in run if "kernel" not in r or owner[r["kernel"]] == i]


def plot_from(jsonl: Path, out: Path, name: str) -> None:
    """``name.png`` and ``name.html`` from a records file."""
    records = [json.loads(ln) for ln in jsonl.read_text().splitlines() if ln.strip()]
    rs = R.rows(records)
    ceil = R.ceilings(records)
    table = R.markdown_table(rs, ceil)
    try:
        png = R.roofline_png(rs, ceil)
        (out / f"{name}.png").write_bytes(png)
    except ImportError:
        png = None
        log("matplotlib is not installed: the HTML report has no picture")
    cands = R.candidates_table(records)
    extra = "<h2>Candidates</h2>\n" + R._md_to_html_table(cands) if cands else ""
    (out / f"{name}.html").write_text(R.html_report(f"GPU benchmark: {ceil.device} {ceil.date}", png, table,
                                                    R.summary(rs, ceil), extra))
    log(f"wrote {out / (name + '.html')}" + (f" and {out / (name + '.png')}" if png else ""))


def dry_run(args: argparse.Namespace) -> int:
    """Generate and nvcc -cubin every build (candidates included); print the plan (no GPU)."""
    kernels = R.parse_kernels(args.kernels)
    cu_dir = args.cu_dir or (args.work or Path(tempfile.mkdtemp(prefix="bench-gpu-"))) / "cu"
    t0 = time.monotonic()
    missing = [k for k in kernels if not (cu_dir / f"{stem(k)}.cu").exists()]
    gen = generate(missing, cu_dir) if missing else {"kernels": {}}
    files, bad_names = discover(cu_dir, kernels, naive=not args.skip_naive)
    work = Path(tempfile.mkdtemp(prefix="bench-gpu-dry-"))
    with ThreadPoolExecutor(max(1, args.build_jobs)) as ex:
        res = {(k, v): ex.submit(nvcc_build, cu, work, cubin=True) for k in kernels for v, cu in files[k].items()}
        res = {kv: f.result() for kv, f in res.items()}
    p = plan(kernels, args)
    print("| kernel | timed sizes | check sizes | GFLOP | MB | AI | bound | est gcc s (EX check) | default cubin "
          "| naive cubin | candidate cubins |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ok = 0
    for k in kernels:
        ex = p[k]["timed"]["EX"]
        cells: dict[str, str] = {}
        for v in files[k]:
            lib, msg = res[(k, v)]
            cells[v] = ptxas_summary(msg) if lib else "FAIL: " + (msg.strip().splitlines() or ["?"])[-1][:60]
            ok += lib is not None
        cand = "; ".join(f"{v}: {c}" for v, c in cells.items() if R.is_candidate(v))
        print(f"| {k} | {'; '.join(R.size_text(s) for s in p[k]['timed'].values())} | "
              f"{'; '.join(f'{lab}: ' + R.size_text(s) for lab, s in p[k]['checks'].items())} | "
              f"{R.flops(k, ex) / 1e9:.3g} | {R.nbytes(k, ex) / 1e6:.4g} | {R.intensity(k, ex):.3g} | "
              f"{'mem' if k in R.MEMORY_BOUND or R.intensity(k, ex) < 13 else 'fp64'} | "
              f"{R.flops(k, p[k]['checks']['EX']) / CPU_RATE:.0f} | {cells['default']} | {cells.get('naive', '-')} "
              f"| {cand or '-'} |")
    for rec in bad_names:
        print(f"error: {rec['message']}")
    gen_fail = [f"{k}:{v}" for k, e in gen.get("kernels", {}).items() for v in VARIANTS if e.get(v) != "ok"]
    n = sum(len(f) for f in files.values())
    print(f"\n{ok}/{n} builds compiled with nvcc -arch=sm_90 -cubin; .cu files in {cu_dir}"
          f"{'; generation failed: ' + ', '.join(gen_fail) if gen_fail else ''}; {time.monotonic() - t0:.0f} s")
    print(f"would time {sum(len(x['timed']) for x in p.values())} (kernel, size) pairs x their builds ({n} in all) "
          f"(+ cuBLAS for {', '.join(k for k in kernels if k in R.MATMUL_LIKE)}), check "
          f"{sum(len(x['checks']) for x in p.values())} sizes x their builds against gcc, "
          f"calibrate copy bandwidth and DGEMM; budget {args.budget:.0f} s")
    return 0 if ok == n and not bad_names else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", help="comma-separated names (fdtd-2d or fdtd_2d); default: all 30")
    ap.add_argument("--cu-dir", type=Path, help="take K.cu and K.naive.cu from here (else generate them); "
                    "every K.cand-<label>.cu there is an extra build, cand-<label>")
    ap.add_argument("--generate", type=Path, metavar="DIR", help="only write the .cu files and the manifest")
    ap.add_argument("--dry-run", action="store_true", help="generate, nvcc -cubin, print the plan; no GPU")
    ap.add_argument("--quick", action="store_true", help="5 samples, no BIG sizes, checks at EX and off2 only")
    ap.add_argument("--skip-naive", action="store_true",
                    help="do not build, check or time K.naive.cu (speedups vs naive show '-'): for comparing "
                         "candidates with opt")
    ap.add_argument("--budget", type=float, default=420.0,
                    help="wall-clock seconds for the whole run (it may overrun by up to ~60 s for the last "
                         "comparisons)")
    ap.add_argument("--reserve", type=float, default=40.0, help="seconds kept for the end (comparisons)")
    ap.add_argument("--iters", type=int, default=None, help="timed samples per build (default 20; 5 with --quick)")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--sets", type=int, default=3, help="rotated input copies on the device")
    ap.add_argument("--cpu-jobs", type=int, default=max(1, (os.cpu_count() or 4) - 4))
    ap.add_argument("--build-jobs", type=int, default=min(8, os.cpu_count() or 4))
    ap.add_argument("--cpu-cap", type=float, default=60.0,
                    help="estimated gcc seconds above which the EX check cuts the time steps")
    ap.add_argument("--spread-cap", type=float, default=20.0,
                    help="measure the FMA rounding spread when the reference took less than this")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path(os.environ["OUT"]) if os.environ.get("OUT") else ROOT / "bench" / "results")
    ap.add_argument("--name", default="h200", help="output file stem")
    ap.add_argument("--work", type=Path, help="scratch directory (default: a new temp dir)")
    ap.add_argument("--plot", action="store_true", help="also write NAME.png and NAME.html")
    ap.add_argument("--plot-from", type=Path, metavar="JSONL", help="only draw the PNG and HTML from a records file")
    ap.add_argument("--merge", type=Path, nargs="+", metavar="JSONL",
                    help="only write NAME.md/.jsonl from several runs' records: a kernel's come from the last "
                         "file that has any (e.g. the full table, then a run of the kernels that changed)")
    ap.add_argument("--_gpu", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--_cpu", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--_calibrate", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.iters is None:
        args.iters = 5 if args.quick else 20
    fake = os.environ.get("BENCH_FAKE_GPU") == "1"
    if args._gpu:
        job = json.loads(args._gpu.read_text())
        return fake_child("gpu", job) if fake else gpu_child(job)
    if args._cpu:
        cpu_job(json.loads(args._cpu.read_text()))
        return 0
    if args._calibrate:
        job = json.loads(args._calibrate.read_text())
        return fake_child("calibrate", job) if fake else calibrate(job)
    if args.plot_from:
        args.out.mkdir(parents=True, exist_ok=True)
        plot_from(args.plot_from, args.out, args.name)
        return 0
    if args.merge:
        args.out.mkdir(parents=True, exist_ok=True)
        records = merge_records([[json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
                                 for f in args.merge])
        (args.out / f"{args.name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        write_outputs(records, args.out, args.name, args, final=True)
        if args.plot:
            plot_from(args.out / f"{args.name}.jsonl", args.out, args.name)
        return 0
    if args.generate:
        m = generate(R.parse_kernels(args.kernels), args.generate)
        bad = {k: {v: e[v] for v in VARIANTS if e[v] != "ok"} for k, e in m["kernels"].items()
               if any(e[v] != "ok" for v in VARIANTS)}
        print(f"wrote {2 * len(m['kernels'])} .cu files and manifest.json to {args.generate}"
              + (f"; failed: {bad}" if bad else ""))
        return 1 if bad else 0
    if args.dry_run:
        return dry_run(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

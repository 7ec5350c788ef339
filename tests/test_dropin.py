"""The drop-in host function (issue 10): footprint analysis, partly written outputs on the
simulator (both copy paths, chunked staging, state kept and released), the simulator's
async-copy checks, and bench/dropin.py's generator and nvcc build."""

from __future__ import annotations

import ctypes
import dataclasses
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from passes import footprint
from passes.accesses import Affine
from tests import polybench
from transpile import cuda, frontend, ir, pipeline
from transpile.cuda import host as cuda_host
from transpile.frontend import c as cfront
from transpile.sim import SimLibrary, build
from transpile.verify import Options, verify_module

ROOT = Path(__file__).resolve().parent.parent
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")

PARTIAL = r"""
void partial(int n, double A[n], double B[n], double C[n], double D[n], double E[n])
{
  for (int i = 0; i < n; i += 2)    /* B: the even elements only */
    B[i] = 2.0 * A[i];
  for (int i = 2; i < n - 3; i++)   /* C: a band in the middle */
    C[i] = A[i + 1] - A[i - 1];
  for (int i = 0; i < n; i++)       /* D: every element, never read: no copy-in */
    D[i] = A[i] + 1.0;
  for (int i = 0; i < n; i++)       /* E: only where A is positive */
    if (A[i] > 0.0)
      E[i] = A[i];
}
"""


def _aff(coeffs: dict[str, int], const: int) -> Affine:
    return Affine.of(coeffs, const)


@pytest.fixture(scope="module")
def partial_c(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dropin") / "partial.c"
    path.write_text(PARTIAL)
    return path


@pytest.fixture(scope="module")
def partial_cu(partial_c: Path) -> Path:
    lowered = pipeline.lower(frontend.load(partial_c))
    out = partial_c.with_suffix(".cu")
    out.write_text(cuda.emit(lowered, source=partial_c.name))
    return out


# ---------------------------------------------------------------------------
# passes/footprint.py


def _lowered_fp(name: str) -> dict[str, footprint.Footprint]:
    spec = polybench.spec(name)
    module = pipeline.lower(cfront.parse_file(str(spec.path), function=spec.function))
    return footprint.analyze(module.kernels[0])


def test_footprint_of_a_partly_written_kernel(partial_c: Path) -> None:
    fp = footprint.analyze(frontend.load(partial_c).kernels[0])
    n_minus = {k: _aff({"n": 1}, -k) for k in (1, 2, 4)}
    assert fp["A"].box == ((_aff({}, 0), n_minus[1]),) and fp["A"].read and not fp["A"].written
    # Step 2 from 0: the last written index is not one affine form of n (it depends on n's parity).
    assert not fp["B"].must_write and fp["B"].copy_in
    assert fp["C"].write_box == ((_aff({}, 2), n_minus[4]),) and not fp["C"].must_write
    assert fp["D"].must_write and not fp["D"].read and not fp["D"].copy_in
    assert fp["A"].copy_in
    # Negative: a conditional write is never a must-write, even over the whole range.
    assert fp["E"].write_box == ((_aff({}, 0), n_minus[1]),) and not fp["E"].must_write and fp["E"].copy_in
    assert fp["C"].span((10,), {"n": 10}, writes=True) == (2, 7)
    assert fp["A"].span((10,), {"n": 10}) == (0, 10)


def test_footprint_on_polybench() -> None:
    gemm = _lowered_fp("gemm")
    assert gemm["C"].must_write and gemm["C"].reads_input and gemm["C"].copy_in  # C *= beta reads it
    atax = _lowered_fp("atax")  # y[i] = 0 (and tmp[i] = 0.0) before every read: no input value is seen
    for name in ("y", "tmp"):
        assert atax[name].read and atax[name].must_write and not atax[name].reads_input
        assert not atax[name].copy_in
    mvt = _lowered_fp("mvt")  # x1[i] = x1[i] + ...: the first read sees the caller's value
    assert mvt["x1"].reads_input and mvt["x1"].copy_in
    assert gemm["A"].box == ((_aff({}, 0), _aff({"ni": 1}, -1)), (_aff({}, 0), _aff({"nk": 1}, -1)))
    jac = _lowered_fp("jacobi-1d")
    assert jac["B"].write_box == ((_aff({}, 1), _aff({"n": 1}, -2)),) and not jac["B"].must_write
    assert jac["B"].span((100,), {"n": 100, "tsteps": 3}, writes=True) == (1, 99)
    trmm = _lowered_fp("trmm")  # strictly lower triangle: rows from 1
    assert trmm["A"].box is not None and trmm["A"].box[0][0] == _aff({}, 1)
    # The lower corner (1, 0) flattens to offset m: the first row is not copied.
    assert trmm["A"].span((10, 10), {"m": 10, "n": 12}) == (10, 99)


def test_footprint_past_its_isl_budget_is_the_whole_array(monkeypatch: pytest.MonkeyPatch) -> None:
    """isl's dim_max took minutes on a random nest: past the budget an array is copied whole, in."""
    from passes import footprint

    monkeypatch.setattr(footprint, "MAX_OPERATIONS", 10)
    shapes = {"A": (30, 40), "x": (40,), "y": (40,), "tmp": (30,)}
    for name, fp in _lowered_fp("atax").items():
        assert fp.copy_in and not fp.must_write and fp.reads_input == fp.read, name
        whole = 1
        for d in shapes[name]:
            whole *= d
        assert fp.span(shapes[name], {"m": 30, "n": 40}) == (0, whole), name
    jac = _lowered_fp("jacobi-1d")["B"]
    assert jac.span((100,), {"n": 100, "tsteps": 3}, writes=True) == (0, 100)


# ---------------------------------------------------------------------------
# The emitted drop-in on the simulator


@needs_gxx
def test_partly_written_output_passes_stage_c(partial_c: Path) -> None:
    module = frontend.load(partial_c)
    lowered = pipeline.lower(module)
    text = cuda.emit(lowered, source=partial_c.name)
    opts = Options(seed=11, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, text, source=partial_c, lowered=lowered, options=opts)
    assert report.ok, report.summary()
    assert report.stage("c").status == "pass"


def _call(lib: SimLibrary, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    a = rng.uniform(-1.0, 1.0, n)
    arrays = {"A": a, **{k: np.full(n, -7.0) for k in "BCDE"}}
    run = lib.run("partial", n, *arrays.values(), restype=None)
    assert run.ok and not run.diagnostics, run.diagnostics
    return arrays


def _expected(n: int, a: np.ndarray) -> dict[str, np.ndarray]:
    b, c, e = np.full(n, -7.0), np.full(n, -7.0), np.full(n, -7.0)
    b[0::2] = 2.0 * a[0::2]
    c[2:n - 3] = a[3:n - 2] - a[1:n - 4]
    e[a > 0] = a[a > 0]
    return {"B": b, "C": c, "D": a + 1.0, "E": e}


@pytest.mark.sample(2)
@needs_gxx
@pytest.mark.parametrize("mode", ["auto", "staged", "register", "serial", "trace", "threads=2", "threads=1",
                                  "caller=0", "share=1", "share=1,threads=2", "first=small", "first=pageable",
                                  "first=mixed", "first=full"])
def test_untouched_elements_keep_their_values(partial_cu: Path, tmp_path: Path, mode: str,
                                              monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    # A ring of three 256-byte slots and chunks of at least 16 bytes: an 800-byte array crosses in
    # several chunks that wrap around the ring, copied by the caller and helper threads (as many as
    # the machine has hardware threads, up to 3 in all).
    # Registered ranges go in 128-byte pieces on 64-byte "pages": several pieces per array.  A first
    # call stages through two 128-byte slots (first=small), which the next call replaces by the ring.
    # Three threads touch the 64-byte pages of the arrays that only come back (prefault), each byte
    # rewritten with its own value before the copy-out.
    flags = ("-U_FORTIFY_SOURCE", "-DTRANSPILE_STAGE_SLOT_BYTES=256", "-DTRANSPILE_STAGE_SLOTS=3",
             "-DTRANSPILE_FIRST_RING_SLOTS=2", "-DTRANSPILE_FIRST_RING_SLOT_BYTES=128",
             "-DTRANSPILE_STAGE_MIN_CHUNK_BYTES=16", "-DTRANSPILE_STAGE_THREADS=3",
             "-DTRANSPILE_PARALLEL_MIN_BYTES=16", "-DTRANSPILE_PAGE_BYTES=64", "-DTRANSPILE_REGISTER_PIECE_BYTES=128",
             "-DTRANSPILE_STAGE_MIN_PIECE_BYTES=16", "-DTRANSPILE_PREFAULT_MIN_BYTES=16",
             "-DTRANSPILE_PREFAULT_THREADS=3")
    lib = SimLibrary(build(partial_cu, tmp_path, extra_flags=flags))
    lib.set_quiet(True)
    if mode == "serial":  # every copy-in before the kernels, every copy-out after them
        monkeypatch.setenv("TRANSPILE_DROPIN_PHASES", "0")
    elif mode == "trace":  # each call prints its steps' times (bench/dropin.py reads them)
        monkeypatch.setenv("TRANSPILE_DROPIN_TRACE", "1")
    elif mode.startswith("share=1"):  # the copiers share each chunk (pieces of 64 bytes here)
        monkeypatch.setenv("TRANSPILE_DROPIN_SHARE", "1")
        if "threads=" in mode:
            monkeypatch.setenv("TRANSPILE_DROPIN_THREADS", mode.split("threads=")[1])
    elif mode.startswith("threads="):  # fewer copying threads than built with (1: the caller alone)
        monkeypatch.setenv("TRANSPILE_DROPIN_THREADS", mode.split("=")[1])
    elif mode.startswith("first="):  # a first call's path: small ring, pageable copies, ring in and pageable out, the full ring
        monkeypatch.setenv("TRANSPILE_DROPIN_FIRST", mode.split("=")[1])
    elif mode == "caller=0":  # the calling thread only issues DMAs (the helpers copy every chunk)
        monkeypatch.setenv("TRANSPILE_DROPIN_CALLER_COPIES", "0")
    elif mode != "auto":
        monkeypatch.setenv("TRANSPILE_DROPIN_COPY", mode)
    rng = np.random.default_rng(5)
    capfd.readouterr()
    for k, n in enumerate((100, 37, 8, 1, 0, 100)):  # the state (pool, stream, staging) is kept between calls
        got = _call(lib, n, rng)
        for name, want in _expected(n, got["A"]).items():
            np.testing.assert_array_equal(got[name], want, err_msg=f"{name} (n={n}, {mode})")
        if k == 0 and mode in ("auto", "first=pageable"):  # a first call this small allocates no ring
            assert lib.live_allocations() == 0, mode
    sys.path.insert(0, str(ROOT / "bench"))
    import dropin  # type: ignore[import-not-found]

    traces = dropin.trace_lines(capfd.readouterr().err)
    assert len(traces) == (6 if mode == "trace" else 0)
    assert all(set(t) == set(dropin.TRACE_STEPS) and min(t.values()) >= 0.0 for t in traces)
    assert lib.live_allocations() == (1 if mode != "register" else 0)  # the staging ring
    lib.call("partial_release", restype=None)
    assert lib.live_allocations() == 0 and lib.findings().ok
    got = _call(lib, 37, rng)  # usable again after a release
    np.testing.assert_array_equal(got["C"], _expected(37, got["A"])["C"])
    lib.call("partial_release", restype=None)



def test_the_host_runtime_keeps_the_split_convention(partial_cu: Path) -> None:
    # build.host_runtime_split cuts each function of the drop-in runtime at the first line that is
    # exactly "}": a body with another line at column 0 would swallow what follows it.
    from transpile.sim.build import HOST_RUNTIME_BEGIN, HOST_RUNTIME_END, host_runtime_split

    text = partial_cu.read_text()
    lines = text.split("\n")
    begin = next(k for k, ln in enumerate(lines) if ln.startswith(HOST_RUNTIME_BEGIN))
    end = lines.index(HOST_RUNTIME_END)
    starts = [k for k in range(begin, end) if lines[k].startswith("[[maybe_unused]] static ")
              and not lines[k].startswith("[[maybe_unused]] static inline ")]
    assert len(starts) > 30
    for k in starts:
        open_, close = lines.index("{", k), lines.index("}", k)
        stray = [ln for ln in lines[open_ + 1:close] if ln and not ln[0].isspace() and not ln.startswith("#")]
        assert not stray and close < end, f"line {k + 1}: a line at column 0 inside the body: {stray[:1]}"
    split = host_runtime_split(text)
    assert split is not None
    library, unit = split
    assert library.count("\n") == text.count("\n")  # the lines after the runtime keep their numbers
    assert library.split("\n")[end + 1:] == lines[end + 1:]
    assert "transpile_dropin_stage(" in unit and "{" not in "".join(
        ln for ln in library.split("\n")[begin:end] if ln.startswith("__attribute__"))
    assert host_runtime_split(text.replace(HOST_RUNTIME_END, "// (no end)")) is None


@needs_gxx
def test_split_and_single_builds_of_a_drop_in_agree(partial_cu: Path, tmp_path: Path) -> None:
    # The split build links the drop-in runtime compiled once (dropin_rt-*.o); the single build
    # compiles the file alone. The same exports and the same results, staged through a small ring.
    from transpile.sim.build import objects_dir

    flags = ("-DTRANSPILE_STAGE_SLOT_BYTES=256", "-DTRANSPILE_STAGE_SLOTS=3", "-DTRANSPILE_STAGE_MIN_CHUNK_BYTES=16",
             "-DTRANSPILE_PARALLEL_MIN_BYTES=16")
    split = build(partial_cu, tmp_path / "split", extra_flags=flags)
    single = build(partial_cu, tmp_path / "single", extra_flags=flags, split=False)
    assert split.symbols == single.symbols == ("partial", "partial_device", "partial_release")
    assert any(p.name.startswith("dropin_rt-") and p.suffix == ".o" for p in objects_dir(tmp_path / "split").iterdir())
    results = []
    for b in (split, single):
        lib = SimLibrary(b)
        rng = np.random.default_rng(11)
        got = [_call(lib, n, rng) for n in (100, 37, 1)]
        lib.call("partial_release", restype=None)
        assert lib.live_allocations() == 0 and lib.findings().ok
        results.append(got)
    for one, other in zip(*results):
        for name in "ABCDE":
            np.testing.assert_array_equal(one[name], other[name])
        for name, want in _expected(len(one["A"]), one["A"]).items():
            np.testing.assert_array_equal(one[name], want)


@needs_gxx
def test_closing_the_library_frees_what_the_drop_in_keeps(partial_cu: Path, tmp_path: Path) -> None:
    """SimLibrary.close (also run when the object is collected) calls the called drop-ins' NAME_release:
    the staging ring and pool go; the library is usable again after it."""
    lib = SimLibrary(build(partial_cu, tmp_path, extra_flags=("-U_FORTIFY_SOURCE",)))
    lib.set_quiet(True)
    rng = np.random.default_rng(3)
    _call(lib, 100, rng)
    assert lib.live_allocations() == 0  # a first call this small copies directly: no ring
    _call(lib, 100, rng)
    assert lib.live_allocations() == 1  # the staging ring stays between calls
    lib.close()
    assert lib.live_allocations() == 0 and lib.findings().ok
    with lib:
        got = _call(lib, 37, rng)
        np.testing.assert_array_equal(got["C"], _expected(37, got["A"])["C"])
    assert lib.live_allocations() == 0

ASYNC_MISUSE = r"""
#include <cuda_runtime.h>
#include <string.h>

// Writes the pinned source before the copy is ordered before the host.
extern "C" int early_write(double *out)
{
  double *pinned = NULL, *dev = NULL;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMallocHost((void **)&pinned, 8 * sizeof(double));
  cudaMalloc((void **)&dev, 8 * sizeof(double));
  for (int i = 0; i < 8; ++i) pinned[i] = i;
  cudaMemcpyAsync(dev, pinned, 8 * sizeof(double), cudaMemcpyHostToDevice, s);
  pinned[3] = 42.0;  // too early: the DMA may still be reading
  cudaStreamSynchronize(s);
  cudaMemcpy(out, dev, 8 * sizeof(double), cudaMemcpyDeviceToHost);
  cudaFree(dev);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
  return 0;
}

// Reads a device-to-host copy into pinned memory before and after synchronising.
extern "C" int early_read(double *before, double *after)
{
  double *pinned = NULL, *dev = NULL;
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMallocHost((void **)&pinned, sizeof(double));
  cudaMalloc((void **)&dev, sizeof(double));
  const double v = 5.0;
  cudaMemcpy(dev, &v, sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpyAsync(pinned, dev, sizeof(double), cudaMemcpyDeviceToHost, s);
  *before = *pinned;  // not landed yet
  cudaEvent_t e;
  cudaEventCreate(&e);
  cudaEventRecord(e, s);
  cudaEventSynchronize(e);
  *after = *pinned;
  cudaEventDestroy(e);
  cudaFree(dev);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
  return 0;
}
"""


@needs_gxx
def test_simulator_checks_async_copies_with_pinned_memory(tmp_path: Path) -> None:
    src = tmp_path / "async_misuse.cu"
    src.write_text(ASYNC_MISUSE)
    lib = SimLibrary(build(src, tmp_path, extra_flags=("-U_FORTIFY_SOURCE",)))
    lib.set_quiet(True)
    out = np.zeros(8)
    run = lib.run("early_write", out)
    assert "was modified before a synchronisation" in run.diagnostics
    before, after = np.zeros(1), np.zeros(1)
    run = lib.run("early_read", before, after)
    assert run.ok, run.diagnostics
    assert after[0] == 5.0 and before[0] != 5.0  # poisoned until the event synchronised it


# ---------------------------------------------------------------------------
# bench/dropin.py


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_bench_generates_and_builds_harnesses(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import dropin  # type: ignore[import-not-found]

    cu = tmp_path / "cu"
    manifest = dropin.generate(["atax", "jacobi-1d"], cu)
    for k in ("atax", "jacobi-1d"):
        e = manifest["kernels"][k]
        assert e["status"] == "ok", e
        assert set(e["sizes"]) == {"LARGE", "EXTRALARGE"}
    # atax: A and x cross in; y and tmp are written before they are read (no copy-in) and cross out.
    xl = manifest["kernels"]["atax"]["bytes"]["EXTRALARGE"]
    m, n = 1800, 2200
    assert xl["arrays"] == 8 * (m * n + n + n + m) and xl["h2d"] == 8 * (m * n + n)
    assert xl["d2h"] == 8 * (n + m)
    jac = manifest["kernels"]["jacobi-1d"]["bytes"]["LARGE"]
    assert jac["d2h"] == 2 * 8 * (2000 - 2)  # the interior of A and B
    assert json.loads((cu / "manifest.json").read_text())["kernels"]["atax"]["function"] == "kernel_atax"
    rc = dropin.main(["--dry-run", "--kernels", "atax,jacobi-1d", "--cu-dir", str(cu), "--build-jobs", "2",
                      "--work", str(tmp_path / "build")])
    assert rc == 0
    built = {p.name.rsplit("-", 1)[0] for p in (tmp_path / "build").iterdir()}
    assert {"atax", "jacobi_1d", "probe"} <= built


WRITE_FIRST = r"""
void wf(int n, double A[n], double X[n], double Y[n], double Z[n])
{
  for (int i = 0; i < n; i++) {
    X[i] = A[i];
    X[i] = X[i] * 2.0;      /* reads what the line above wrote */
  }
  for (int i = 0; i < n; i++)
    Y[i] = Y[i] + A[i];     /* reads the caller's Y before writing it */
  for (int i = 0; i < n; i++)
    Z[i] = 1.0;
  for (int i = 1; i < n; i++)
    Z[i] = Z[i - 1] + A[i]; /* Z[i - 1] was written: by the loop above, or this one */
}
"""


def test_reads_of_values_written_first(tmp_path: Path) -> None:
    src = tmp_path / "wf.c"
    src.write_text(WRITE_FIRST)
    fp = footprint.analyze(frontend.load(src).kernels[0])
    assert not fp["X"].reads_input and not fp["X"].copy_in
    assert fp["Y"].reads_input and fp["Y"].copy_in  # same statement: the read comes first
    assert not fp["Z"].reads_input and not fp["Z"].copy_in


def test_bench_report_from_records() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import argparse

    import dropin  # type: ignore[import-not-found]

    out = "\n".join(['{"init_ms": 90.0, "first_ms": 12.5}', '{"kernel_ms": [1.0, 1.0]}', "noise",
                     '{"mode": "auto", "times": [4.0, 3.0, 5.0]}', '{"mode": "staged", "times": [6.0, 6.0]}',
                     '{"mode": "register", "times": [4.5, 4.5]}', '{"mode": "pinned", "times": [3.3, 3.3]}',
                     '{"mode": "serial", "times": [5.5, 5.5]}', '{"mode": "stores=none", "times": [6.0]}',
                     '{"mode": "stores=none", "times": [7.0, 8.0]}'])
    res = dropin.merge_lines(out)
    assert res["modes"]["auto"] == [4.0, 3.0, 5.0] and res["kernel_ms"] == [1.0, 1.0] and res["first_ms"] == 12.5
    assert res["modes"]["stores=none"] == [6.0, 7.0, 8.0]  # a mode named twice pools its samples
    probe = {"sizes": [{"bytes": 1 << 20, "h2d_pageable_GBps": 10.0, "d2h_pageable_GBps": 10.0,
                        "h2d_pinned_GBps": 25.0, "d2h_pinned_GBps": 20.0, "register_unregister_ms": 0.1,
                        "h2d_registered_GBps": 15.0, "host_memcpy_GBps": 12.0, "memcpy_to_pinned_GBps": 12.0,
                        "cudaMalloc_free_ms": 0.2, "pool_alloc_free_ms": 0.01},
                       {"bytes": 512 << 20, "h2d_pageable_GBps": 12.0, "d2h_pageable_GBps": 12.0,
                        "h2d_pinned_GBps": 50.0, "d2h_pinned_GBps": 40.0, "register_unregister_ms": 5.0,
                        "h2d_registered_GBps": 30.0, "host_memcpy_GBps": 12.0, "memcpy_to_pinned_GBps": 12.0,
                        "cudaMalloc_free_ms": 1.0, "pool_alloc_free_ms": 0.01}],
             "threads": [{"threads": 1, "to_pinned_GBps": 5.0, "from_pinned_GBps": 5.0},
                         {"threads": 8, "to_pinned_GBps": 25.0, "from_pinned_GBps": 10.0}]}
    rec_bytes = {"h2d": 100_000_000, "d2h": 40_000_000, "arrays": 120_000_000}
    assert dropin.floor_ms(rec_bytes, probe) == pytest.approx(2.0 + 1.0)  # peak pinned bandwidths
    rec = {"kernel": "gemm", "size": "EXTRALARGE", "bytes": rec_bytes, **res}
    rec["median_ms"] = {m: float(np.median(v)) for m, v in rec["modes"].items()}
    rec["kernel_median_ms"] = 1.0
    rec["floor_ms"] = dropin.floor_ms(rec_bytes, probe) + 1.0
    rec["ratio"] = {m: v / rec["floor_ms"] for m, v in rec["median_ms"].items()}
    # the host copies' best rates (25 and 10 GB/s) bound each way: 4 + 4 ms, plus the kernel
    assert dropin.host_floor_ms(rec_bytes, probe) == pytest.approx(8.0)
    rec["host_floor_ms"] = 9.0
    rec["trace"] = dropin.trace_lines("noise\n" + "\n".join(
        'transpile-trace {"kernel": "gemm", "alloc": 0.01, "in": ' + t + ', "issue": 0.02, "out": 0.5, "sync": 1.0, '
        '"free": 0.01}' for t in ("2.0", "3.0", "2.5")))
    args = argparse.Namespace(reps=7)
    md = dropin.report([rec, {"kernel": "lu", "size": "EXTRALARGE", "error": "timed out"}], probe, args)
    assert "| gemm | EXTRALARGE | 12.5 | 4 | 6 | 4.5 | 5.5 | 3.3 | - | 1 | 4 | 1.00 | ok | 0.82 | 9 | 0.44 |" in md
    assert "| lu | EXTRALARGE | timed out |" in md and "1/1 within 1.5x" in md
    assert "| gemm | EXTRALARGE | stores=none | 3 | 7 | 1.75 | 1.75 |" in md  # modes without a column
    assert "| gemm | EXTRALARGE | 3 | 0.01 | 2.5 | 0.02 | 0.5 | 1 | 0.01 | 4.04 |" in md  # the traced steps
    # no auto mode (an A/B of other modes): no verdict, not "within"
    only = {**rec, "modes": {"stores=none": [7.0]}, "median_ms": {"stores=none": 7.0}, "ratio": {"stores=none": 1.75}}
    assert "no auto mode timed" in dropin.report([only], probe, args)


BYTES = r"""
void bump(int n, char a[n], char b[n])
{
  for (int i = 0; i < n; i++)
    b[i] = a[i] + 1;
}
"""


@needs_gxx
@pytest.mark.parametrize("stream,env", [(0, None), (1, None), (0, "both"), (1, "none")])
def test_staging_slices_cover_odd_chunks(tmp_path: Path, stream: int, env: str | None,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # 259-byte slots, so chunks of an odd size (the last one shorter), 2 slots: the ring wraps many times.
    # With streaming stores (either direction; by the macros, or the environment's override), the
    # copies start and end off the 16-byte grid.
    if env is not None:
        monkeypatch.setenv("TRANSPILE_DROPIN_STREAM_STORES", env)
    src = tmp_path / "bump.c"
    src.write_text(BYTES)
    cu = tmp_path / "bump.cu"
    cu.write_text(cuda.emit(pipeline.lower(frontend.load(src)), source=src.name))
    flags = ("-U_FORTIFY_SOURCE", "-DTRANSPILE_STAGE_SLOT_BYTES=259", "-DTRANSPILE_STAGE_SLOTS=2",
             "-DTRANSPILE_STAGE_MIN_CHUNK_BYTES=259", "-DTRANSPILE_STAGE_THREADS=4", "-DTRANSPILE_PARALLEL_MIN_BYTES=16",
             f"-DTRANSPILE_STAGE_STREAM_STORES_IN={stream}", f"-DTRANSPILE_STAGE_STREAM_STORES_OUT={stream}")
    lib = SimLibrary(build(cu, tmp_path, extra_flags=flags))
    lib.set_quiet(True)
    a = np.random.default_rng(3).integers(-100, 100, 600).astype(np.int8)
    b = np.zeros(600, np.int8)
    run = lib.run("bump", 600, a, b, restype=None)
    assert run.ok and not run.diagnostics, run.diagnostics
    np.testing.assert_array_equal(b, a + 1)
    lib.call("bump_release", restype=None)
    assert lib.live_allocations() == 0


HELPERS = r"""
extern "C" int pre_register(void *p, unsigned long long n) { return (int)cudaHostRegister(p, n, 0); }
extern "C" int pre_unregister(void *p) { return (int)cudaHostUnregister(p); }
"""


@needs_gxx
def test_refused_registration_falls_back_to_staging(partial_cu: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The caller has registered a few bytes in the middle of E: the drop-in's pieces stop there
    # (CUDA refuses overlapping registrations) and the rest of E is staged.
    cu = tmp_path / "partial_pre.cu"
    cu.write_text(partial_cu.read_text() + HELPERS)
    flags = ("-U_FORTIFY_SOURCE", "-DTRANSPILE_STAGE_SLOT_BYTES=256", "-DTRANSPILE_PAGE_BYTES=64",
             "-DTRANSPILE_REGISTER_PIECE_BYTES=128")
    lib = SimLibrary(build(cu, tmp_path, extra_flags=flags))
    lib.set_quiet(True)
    monkeypatch.setenv("TRANSPILE_DROPIN_COPY", "register")
    monkeypatch.setenv("TRANSPILE_DROPIN_FIRST", "full")  # a first call's path is not the point here
    n = 100
    a = np.random.default_rng(9).uniform(-1.0, 1.0, n)
    arrays = {"A": a, **{k: np.full(n, -7.0) for k in "BCDE"}}
    middle = arrays["E"].ctypes.data + 8 * 40
    lib.reset()
    assert lib.call("pre_register", ctypes.c_void_p(middle), ctypes.c_ulonglong(24)) == 0
    run = lib.run("partial", n, *arrays.values(), restype=None)
    assert run.ok and not run.diagnostics, run.diagnostics
    for name, want in _expected(n, a).items():
        np.testing.assert_array_equal(arrays[name], want, err_msg=name)
    assert lib.call("pre_unregister", ctypes.c_void_p(middle)) == 0
    assert lib.live_allocations() == 1  # the staging ring: E's tail was staged
    lib.call("partial_release", restype=None)


EMPTY_WRITES = r"""
void diag(int n, int w, int T[n][n])
{
  for (int i = 0; i < n - w; i++)
    for (int k = i + 1; k < w + i; k++)   /* no iteration unless w >= 2 */
      T[i][w + i] = T[i][w + i] + T[i][k];
}
"""


@needs_gxx
def test_copy_out_stays_inside_the_copy_in_range(tmp_path: Path) -> None:
    # The boxes are single affine pieces valid where the accesses exist (w >= 2): the reads start at
    # column 1, the writes at column w.  At w = 0 the write box, taken at face value, starts at
    # element [0][0], which nothing copied in or wrote: it must not come back.
    src = tmp_path / "diag.c"
    src.write_text(EMPTY_WRITES)
    fp = footprint.analyze(pipeline.lower(frontend.load(src)).kernels[0])["T"]
    assert fp.box is not None and fp.write_box is not None and fp.copy_in
    cu = tmp_path / "diag.cu"
    cu.write_text(cuda.emit(pipeline.lower(frontend.load(src)), source="diag.c"))
    lib = SimLibrary(build(cu, tmp_path / "sim"))
    for n, w in ((1, 0), (3, 0), (3, 1), (4, 2), (6, 3)):
        t = np.arange(n * n, dtype=np.int32).reshape(n, n) - 5
        want = t.copy()
        for i in range(n - w):
            for k in range(i + 1, w + i):
                want[i][w + i] += want[i][k]
        run = lib.run("diag", n, w, t, restype=None)
        assert run.ok and not run.diagnostics, run.diagnostics
        np.testing.assert_array_equal(t, want, err_msg=f"n={n} w={w}")


def _plan(src: Path) -> cuda_host.Plan:
    kernel = pipeline.lower(frontend.load(src)).kernels[0]
    fps = footprint.analyze(kernel)
    intent = {p.name: p.intent for p in kernel.params}
    return cuda_host.plan(kernel, {n: f.copy_in for n, f in fps.items()},
                          {n: f.written and intent[n] != "in" for n, f in fps.items()})


def test_copies_are_placed_between_phases(partial_c: Path) -> None:
    """Each array is copied in before the first phase that touches it and may go back after the
    last phase that writes it; points with nothing to do are not made."""
    got = _plan(ROOT / "tests" / "kernels" / "3mm.c")
    assert (got.starts, got.last) == ((1, 2), 3)
    assert {a: p for a, p in got.in_at.items() if p >= 0} == {"A": 0, "B": 0, "C": 1, "D": 1}
    assert {a: p for a, p in got.out_after.items() if p >= 0} == {"E": 1, "F": 2, "G": 3}
    got = _plan(partial_c)  # three launches (D's loop is fused with B's or C's)
    assert got.last == len(got.starts) + 1 and got.in_at["A"] == 0 and got.in_at["D"] == -1
    assert got.out_after["B"] < got.last and got.out_after["E"] == got.last
    gemm = _plan(ROOT / "tests" / "kernels" / "gemm.c")  # one phase: copy-ins first, copy-outs last
    assert gemm.starts == () and set(gemm.out_after.values()) <= {-1, 1}
    # A return (the IR allows one; C's final `return;` is dropped) could skip later points: no phases.
    kernel = pipeline.lower(frontend.load(partial_c)).kernels[0]
    body = kernel.body
    kernel = dataclasses.replace(kernel, body=(*body[:1], ir.If(ir.Var("n", ir.I32), (ir.Return(),), ()), *body[1:]))
    every = {p.name: True for p in kernel.params if isinstance(p.ty, ir.ArrayType)}
    ret = cuda_host.plan(kernel, every, every)
    assert ret.starts == () and ret.last == 1
    assert set(ret.in_at.values()) == {0} and set(ret.out_after.values()) == {1}


def _partial_variant(partial_cu: Path, tmp_path: Path, drop: str | None) -> SimLibrary:
    """The drop-in of ``partial`` with the line ``drop`` taken out (None: as emitted)."""
    text = partial_cu.read_text()
    if drop is not None:
        assert text.count(drop) == 1, drop
        text = text.replace(drop, "")
    tmp_path.mkdir(exist_ok=True)
    cu = tmp_path / "partial_variant.cu"
    cu.write_text(text + HELPERS)
    lib = SimLibrary(build(cu, tmp_path, extra_flags=("-U_FORTIFY_SOURCE",)))
    lib.set_quiet(True)
    return lib


@needs_gxx
@pytest.mark.parametrize("pinned", [False, True])
def test_phased_copies_are_ordered_by_events(partial_cu: Path, tmp_path: Path, pinned: bool) -> None:
    """The simulator's stream-order check sees every copy and kernel of the phased drop-in: with the
    kernels' wait for the copy-ins, or the copy-outs' wait for the kernels, taken out, it reports a
    race; as emitted, none.  Caller-pinned arrays take the direct path, whose copy-outs start
    between phases."""
    drops = [None,
             'transpile_check(cudaStreamWaitEvent(s->stream, s->ready, 0), c->kernel, "cudaStreamWaitEvent");',
             'transpile_check(cudaStreamWaitEvent(s->down, s->mark[q], 0), c->kernel, "cudaStreamWaitEvent");']
    n = 100
    for i, drop in enumerate(drops):
        lib = _partial_variant(partial_cu, tmp_path / str(i), drop)
        a = np.random.default_rng(4).uniform(-1.0, 1.0, n)
        arrays = {"A": a, **{k: np.full(n, -7.0) for k in "BCDE"}}
        if pinned:
            for x in arrays.values():
                assert lib.call("pre_register", ctypes.c_void_p(x.ctypes.data), ctypes.c_ulonglong(x.nbytes)) == 0
        run = lib.run("partial", n, *arrays.values(), restype=None)
        races = [x for x in run.diagnostics.splitlines() if x.startswith("race on device allocation")]
        assert bool(races) == (drop is not None), (i, run.diagnostics)
        if drop is None:
            assert run.ok and not run.diagnostics, run.diagnostics
            for name, want in _expected(n, a).items():
                np.testing.assert_array_equal(arrays[name], want, err_msg=name)
        if pinned:
            for x in arrays.values():
                assert lib.call("pre_unregister", ctypes.c_void_p(x.ctypes.data)) == 0
        lib.call("partial_release", restype=None)


def test_bench_modes_are_checked_before_any_run() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import dropin  # type: ignore[import-not-found]

    for mode in ("auto", "pinned-serial", "trace", "share=1", "share=1+threads=16", "stores=none"):
        assert dropin.mode_known(mode), mode
    for mode in ("autox", "share", "share=", "sharex=1", "share=1+", "share=1+foo=2"):
        assert not dropin.mode_known(mode), mode
    with pytest.raises(SystemExit):
        dropin.main(["--modes", "auto,share=1+foo=2", "--cu-dir", "unused"])


@needs_gxx
@pytest.mark.parametrize("first", [None, "full"])
def test_a_first_call_takes_no_pool_memory(tmp_path: Path, first: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A state's first call allocates its buffers and its scratch (atax's partials) with cudaMalloc and
    frees them at its end: a pool's first allocation costs 6.4-6.7 ms on an H100 (runs 69, 71).  Later
    calls (and ``TRANSPILE_DROPIN_FIRST=full``) use the pool.  Results right either way."""
    from tests.interp_check import sim_library

    name = "atax"
    spec = polybench.spec(name)
    module = frontend.load(spec.path)
    lib = sim_library(cuda.emit(pipeline.lower(module), source=f"{name}.c"), tmp_path)
    if first is not None:
        monkeypatch.setenv("TRANSPILE_DROPIN_FIRST", first)
    rng = np.random.default_rng(3)
    for call in range(2):
        args = polybench.make_args(name, rng)
        want = polybench.run_c(name, {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})
        before = lib.pool_allocations()
        run = lib.run(spec.function, *args.values(), restype=None)
        assert run.ok, run.diagnostics
        assert run.launches > 0
        for k, v in want.items():
            np.testing.assert_allclose(args[k], v, rtol=1e-12, atol=1e-14, err_msg=k)
        took = lib.pool_allocations() - before
        assert (took == 0) == (call == 0 and first is None), (call, first, took)

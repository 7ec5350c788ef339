"""The benchmark's model and presentation: sizes, bytes and flops per kernel, the table, the roofline.

Pure Python and numpy (matplotlib only for the picture), no GPU: ``bench/gpu.py``
drives the device and writes raw records (JSONL); everything here turns sizes and
records into numbers, a markdown table, a PNG and an HTML report, so it is unit
tested on a machine without a GPU (tests/test_bench.py).

**The model** (:data:`MODEL`).  For every kernel, three formulas over its size
parameters, evaluated by :func:`evaluate`:

* ``flops``: floating-point operations (integer operations for floyd-warshall and
  nussinov, marked ``int``), counted as BLAS does for the BLAS-like kernels
  (2 per multiply-add; ``syrk`` n*n*m since only a triangle is formed) and from
  the C source for the others (``+ - * /`` and ``sqrt`` 1 each).
* ``bytes``: the compulsory traffic through device memory: every array read once
  and every output written once (``inout`` both), a triangle counted half.  For
  the time-stepped kernels (adi, fdtd-2d, heat-3d, jacobi-1d/2d, seidel-2d) one
  streaming pass per sweep and time step (no temporal blocking: that is what a
  kernel that does not block in time must move), so their GB/s compares with the
  copy bandwidth.  gemver: three passes over A (update; x needs all of the new A
  before w can start).
* ``depth``: the reduction depth behind one output element, which scales the
  verifier's tolerance (``1e-10 * sqrt(depth)`` in fp64; see transpile/verify/checks.py).

**Sizes** (:data:`SIZES`): PolyBench/C 4.2 EXTRALARGE (``EX``), and LARGE and
MEDIUM from which the two off-grid correctness sizes are made (``off1``: LARGE
plus one, made odd; ``off2``: MEDIUM minus one, made odd; time steps capped at
10).  gramschmidt uses m >= n (PolyBench has m < n, which leaves A rank
deficient).  :data:`BIG` adds, for the memory-bound kernels, a size whose data is
many times the H200's 60 MB L2 (EXTRALARGE atax/bicg/gesummv fit in it).
"""

from __future__ import annotations

import base64
import html
import io
import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

L2_BYTES = 60 * 2**20
SPEC_FP64_TENSOR = 67e12
"""FLOP/s: the H200 datasheet's fp64 tensor-core rate (a lead; the measured DGEMM rate is the practical peak)."""
TIME_PARAMS = ("tsteps", "tmax")
OFF_GRID_TSTEPS = 10

# (EXTRALARGE, LARGE, MEDIUM), PolyBench/C 4.2.1, in the C parameter order of tests/polybench.py.
SIZES: dict[str, tuple[dict[str, int], dict[str, int], dict[str, int]]] = {
    "2mm": ({"ni": 1600, "nj": 1800, "nk": 2200, "nl": 2400}, {"ni": 800, "nj": 900, "nk": 1100, "nl": 1200},
            {"ni": 180, "nj": 190, "nk": 210, "nl": 220}),
    "3mm": ({"ni": 1600, "nj": 1800, "nk": 2000, "nl": 2200, "nm": 2400},
            {"ni": 800, "nj": 900, "nk": 1000, "nl": 1100, "nm": 1200},
            {"ni": 180, "nj": 190, "nk": 200, "nl": 210, "nm": 220}),
    "adi": ({"tsteps": 1000, "n": 4000}, {"tsteps": 500, "n": 2000}, {"tsteps": 100, "n": 200}),
    "atax": ({"m": 1800, "n": 2200}, {"m": 1900, "n": 2100}, {"m": 390, "n": 410}),
    "bicg": ({"m": 1800, "n": 2200}, {"m": 1900, "n": 2100}, {"m": 390, "n": 410}),
    "cholesky": ({"n": 4000}, {"n": 2000}, {"n": 400}),
    "correlation": ({"m": 2600, "n": 3000}, {"m": 1200, "n": 1400}, {"m": 240, "n": 260}),
    "covariance": ({"m": 2600, "n": 3000}, {"m": 1200, "n": 1400}, {"m": 240, "n": 260}),
    "deriche": ({"w": 7680, "h": 4320}, {"w": 4096, "h": 2160}, {"w": 720, "h": 480}),
    "doitgen": ({"nr": 220, "nq": 250, "np": 270}, {"nr": 150, "nq": 140, "np": 160},
                {"nr": 50, "nq": 40, "np": 60}),
    "durbin": ({"n": 4000}, {"n": 2000}, {"n": 400}),
    "fdtd-2d": ({"tmax": 1000, "nx": 2000, "ny": 2600}, {"tmax": 500, "nx": 1000, "ny": 1200},
                {"tmax": 100, "nx": 200, "ny": 240}),
    "floyd-warshall": ({"n": 5600}, {"n": 2800}, {"n": 500}),
    "gemm": ({"ni": 2000, "nj": 2300, "nk": 2600}, {"ni": 1000, "nj": 1100, "nk": 1200},
             {"ni": 200, "nj": 220, "nk": 240}),
    "gemver": ({"n": 4000}, {"n": 2000}, {"n": 400}),
    "gesummv": ({"n": 2800}, {"n": 1300}, {"n": 250}),
    "gramschmidt": ({"m": 2600, "n": 2000}, {"m": 1200, "n": 1000}, {"m": 240, "n": 200}),
    "heat-3d": ({"tsteps": 1000, "n": 200}, {"tsteps": 500, "n": 120}, {"tsteps": 100, "n": 40}),
    "jacobi-1d": ({"tsteps": 1000, "n": 4000}, {"tsteps": 500, "n": 2000}, {"tsteps": 100, "n": 400}),
    "jacobi-2d": ({"tsteps": 1000, "n": 2800}, {"tsteps": 500, "n": 1300}, {"tsteps": 100, "n": 250}),
    "lu": ({"n": 4000}, {"n": 2000}, {"n": 400}),
    "ludcmp": ({"n": 4000}, {"n": 2000}, {"n": 400}),
    "mvt": ({"n": 4000}, {"n": 2000}, {"n": 400}),
    "nussinov": ({"n": 5500}, {"n": 2500}, {"n": 500}),
    "seidel-2d": ({"tsteps": 1000, "n": 4000}, {"tsteps": 500, "n": 2000}, {"tsteps": 100, "n": 400}),
    "symm": ({"m": 2000, "n": 2600}, {"m": 1000, "n": 1200}, {"m": 200, "n": 240}),
    "syr2k": ({"n": 2600, "m": 2000}, {"n": 1200, "m": 1000}, {"n": 240, "m": 200}),
    "syrk": ({"n": 2600, "m": 2000}, {"n": 1200, "m": 1000}, {"n": 240, "m": 200}),
    "trisolv": ({"n": 4000}, {"n": 2000}, {"n": 400}),
    "trmm": ({"m": 2000, "n": 2600}, {"m": 1000, "n": 1200}, {"m": 200, "n": 240}),
}

MEMORY_BOUND = ("atax", "bicg", "mvt", "gesummv", "gemver", "jacobi-1d", "jacobi-2d", "heat-3d", "fdtd-2d")
"""The kernels the issue names memory-bound: judged against the copy bandwidth."""
BIG: dict[str, dict[str, int]] = {
    "atax": {"m": 12288, "n": 12289},
    "bicg": {"m": 12289, "n": 12288},
    "mvt": {"n": 12288},
    "gesummv": {"n": 12288},
    "gemver": {"n": 12288},
    "jacobi-1d": {"tsteps": 50, "n": 1 << 25},
    "jacobi-2d": {"tsteps": 20, "n": 8192},
    "heat-3d": {"tsteps": 10, "n": 320},
    "fdtd-2d": {"tmax": 20, "nx": 8192, "ny": 8193},
}
"""Sizes far past the L2 for the memory-bound kernels (each >= 0.5 GB of arrays)."""
MATMUL_LIKE = ("gemm", "2mm", "3mm", "syrk")
"""Kernels also timed as cuBLAS (cupy.matmul) on the same data."""
CAND_PREFIX = "cand-"
"""Variant names of the candidate builds (``K.cand-<label>.cu`` is ``cand-<label>``): the Candidates
section only; the main table and summary use ``default`` (opt), ``naive`` and ``cublas``."""


BASELINE = "default-again"
"""The variant name of opt's build (``K.cu``, the very same library) timed a second time inside the
candidates' GPU child, round-robin with the candidates: the Candidates section's same-process
baseline.  Two children time the same build differently (an H200 run had durbin's and jacobi-1d's
candidates, whose block shape cannot matter, all 8-12% "faster" than opt), so a candidate's speedup
is this time over the candidate's, never opt's time from the other child.  It is timed only (opt's
checks cover it) and never enters the main table or summary."""


def is_candidate(variant: object) -> bool:
    """Whether a record's ``variant`` names a candidate build."""
    return isinstance(variant, str) and variant.startswith(CAND_PREFIX)


def candidates_side(variant: object) -> bool:
    """Whether a record belongs to the Candidates section only: a candidate or the baseline timed with them."""
    return is_candidate(variant) or variant == BASELINE


@dataclass(frozen=True)
class Model:
    """Formulas (Python expressions over the size parameters) for one kernel."""

    flops: str
    bytes: str
    depth: str
    integer: bool = False


MODEL: dict[str, Model] = {
    "2mm": Model("2*ni*nj*nk + 2*ni*nl*nj + ni*nj + ni*nl", "8*(ni*nk + nk*nj + nj*nl + ni*nj + 2*ni*nl)", "nk + nj"),
    "3mm": Model("2*(ni*nj*nk + nj*nl*nm + ni*nl*nj)", "8*(ni*nk + nk*nj + nj*nm + nm*nl + ni*nj + nj*nl + ni*nl)",
                 "nk + nm + nj"),
    "adi": Model("30*tsteps*n*n", "96*tsteps*n*n", "n"),
    "atax": Model("4*m*n", "8*(m*n + 2*n + m)", "m + n"),
    "bicg": Model("4*m*n", "8*(n*m + 2*m + 2*n)", "m + n"),
    "cholesky": Model("n**3/3", "8*n*n", "n"),
    "correlation": Model("m*m*n + 6*n*m", "8*(2*n*m + m*m + 2*m)", "n"),
    "covariance": Model("m*m*n + 2*n*m", "8*(2*n*m + m*m + m)", "n"),
    "deriche": Model("32*w*h", "32*w*h", "w + h"),
    "doitgen": Model("2*nr*nq*np*np", "8*(2*nr*nq*np + np*np + np)", "np"),
    "durbin": Model("2*n*n", "16*n", "n"),
    "fdtd-2d": Model("11*tmax*nx*ny", "48*tmax*nx*ny", "tmax"),
    "floyd-warshall": Model("2*n**3", "8*n*n", "1", integer=True),
    "gemm": Model("2*ni*nj*nk + 2*ni*nj", "8*(ni*nk + nk*nj + 2*ni*nj)", "nk"),
    "gemver": Model("10*n*n", "8*(3*n*n + 12*n)", "n"),
    "gesummv": Model("4*n*n + 3*n", "8*(2*n*n + 3*n)", "n"),
    "gramschmidt": Model("2*m*n*n + 3*m*n", "8*(2*m*n + n*n/2 + m*n)", "m + n"),
    "heat-3d": Model("30*tsteps*n**3", "32*tsteps*n**3", "tsteps"),
    "jacobi-1d": Model("6*tsteps*n", "32*tsteps*n", "tsteps"),
    "jacobi-2d": Model("10*tsteps*n*n", "32*tsteps*n*n", "tsteps"),
    "lu": Model("2*n**3/3", "16*n*n", "n"),
    "ludcmp": Model("2*n**3/3 + 2*n*n", "8*(2*n*n + 4*n)", "n"),
    "mvt": Model("4*n*n", "8*(n*n + 6*n)", "n"),
    "nussinov": Model("n**3/3", "8*n*n + n", "1", integer=True),
    "seidel-2d": Model("9*tsteps*n*n", "16*tsteps*n*n", "tsteps"),
    "symm": Model("2*m*m*n", "8*(m*m/2 + 3*m*n)", "m"),
    "syr2k": Model("2*n*n*m", "8*(2*n*m + n*n)", "2*m"),
    "syrk": Model("n*n*m", "8*(n*m + n*n)", "m"),
    "trisolv": Model("n*n", "8*(n*n/2 + 2*n)", "n"),
    "trmm": Model("m*m*n", "8*(m*m/2 + 2*m*n)", "m"),
}

_SAFE = {"__builtins__": {}, "max": max, "min": min, "sqrt": math.sqrt}


def evaluate(expr: str, sizes: Mapping[str, int]) -> float:
    """The value of a model formula for ``sizes``."""
    return float(eval(expr, dict(_SAFE), dict(sizes)))  # noqa: S307 - formulas are the table above


def flops(kernel: str, sizes: Mapping[str, int]) -> float:
    """Floating-point (or, for the integer kernels, integer) operations at ``sizes``."""
    return evaluate(MODEL[kernel].flops, sizes)


def nbytes(kernel: str, sizes: Mapping[str, int]) -> float:
    """Compulsory bytes through device memory at ``sizes``."""
    return evaluate(MODEL[kernel].bytes, sizes)


def depth(kernel: str, sizes: Mapping[str, int]) -> float:
    """Reduction depth (for the tolerance) at ``sizes``."""
    return max(1.0, evaluate(MODEL[kernel].depth, sizes))


def intensity(kernel: str, sizes: Mapping[str, int]) -> float:
    """Arithmetic intensity, operations per compulsory byte."""
    return flops(kernel, sizes) / max(nbytes(kernel, sizes), 1.0)


def _odd(v: int) -> int:
    return v | 1


def plan_sizes(kernel: str) -> dict[str, dict[str, int]]:
    """The sizes of one kernel by label: ``EX``, ``off1``, ``off2`` and (memory-bound kernels) ``BIG``."""
    ex, large, medium = SIZES[kernel]
    off1 = {k: (min(v, OFF_GRID_TSTEPS) if k in TIME_PARAMS else _odd(v + 1)) for k, v in large.items()}
    off2 = {k: (min(v, OFF_GRID_TSTEPS) if k in TIME_PARAMS else _odd(v - 1)) for k, v in medium.items()}
    out = {"EX": dict(ex), "off1": off1, "off2": off2}
    if kernel in BIG:
        out["BIG"] = dict(BIG[kernel])
    return out


def reduced_steps(kernel: str, sizes: Mapping[str, int], cap_s: float, cpu_rate: float) -> dict[str, int]:
    """``sizes`` with its time steps cut so the CPU reference's estimated time fits ``cap_s`` (at least 2)."""
    steps = [k for k in sizes if k in TIME_PARAMS]
    est = flops(kernel, sizes) / cpu_rate
    if not steps or est <= cap_s:
        return dict(sizes)
    k = steps[0]
    return {**sizes, k: max(2, min(sizes[k], int(sizes[k] * cap_s / est)))}


def size_text(sizes: Mapping[str, int]) -> str:
    """``ni=2000 nj=2300`` (time steps included)."""
    return " ".join(f"{k}={v}" for k, v in sizes.items())


def model_table() -> str:
    """The model as a markdown table (for the report and the docs)."""
    lines = ["| kernel | flops (ops) | compulsory bytes | reduction depth |", "|---|---|---|---|"]
    for k, m in MODEL.items():
        lines.append(f"| {k} | `{m.flops}`{' (int ops)' if m.integer else ''} | `{m.bytes}` | `{m.depth}` |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Records -> rows


@dataclass
class Ceilings:
    """Measured (and spec) ceilings of the device."""

    copy_bw: float | None = None  # bytes/s, read + write counted
    dgemm: float | None = None  # FLOP/s, best measured cuBLAS DGEMM
    device: str = ""
    date: str = ""

    @property
    def ridge(self) -> float | None:
        """Operations per byte where the two roofs meet."""
        return self.dgemm / self.copy_bw if self.dgemm and self.copy_bw else None


def ceilings(records: Iterable[Mapping[str, Any]]) -> Ceilings:
    """The ceilings recorded by the calibration step (the last one wins)."""
    c = Ceilings()
    for r in records:
        if r.get("type") == "device":
            c.device, c.date = r.get("device", ""), r.get("date", "")
            c.copy_bw = r.get("copy_bytes_per_s") or c.copy_bw
            rates = [d["flops_per_s"] for d in r.get("dgemm", []) if d.get("flops_per_s")]
            c.dgemm = max(rates) if rates else c.dgemm
    return c


@dataclass
class Row:
    """One line of the table: a kernel at one timed size."""

    kernel: str
    label: str
    sizes: dict[str, int]
    ms: float | None = None
    naive_ms: float | None = None
    cublas_ms: float | None = None
    samples: int = 0
    cpu_s: float | None = None
    cpu_estimated: bool = False
    checks: dict[str, str] | None = None
    note: str = ""
    same_code: bool = False  # opt and naive are the same file: their time difference is noise

    @property
    def flops(self) -> float:
        return flops(self.kernel, self.sizes)

    @property
    def bytes(self) -> float:
        return nbytes(self.kernel, self.sizes)

    def gflops(self, ms: float | None = None) -> float | None:
        t = self.ms if ms is None else ms
        return self.flops / (t * 1e-3) / 1e9 if t else None

    def gbs(self, ms: float | None = None) -> float | None:
        t = self.ms if ms is None else ms
        return self.bytes / (t * 1e-3) / 1e9 if t else None

    def memory_bound(self, ceil: Ceilings) -> bool:
        """Judged against the copy bandwidth: named so by the issue, or below the ridge point."""
        ridge = ceil.ridge or 13.0
        return self.kernel in MEMORY_BOUND or intensity(self.kernel, self.sizes) < ridge


def _median(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


def rows(records: list[Mapping[str, Any]]) -> list[Row]:
    """The table's rows from raw records: one per (kernel, timed size), in kernel then size order."""
    by: dict[tuple[str, str], Row] = {}
    checks: dict[str, dict[str, str]] = {}
    cpu: dict[tuple[str, str], Mapping[str, Any]] = {}
    notes: dict[str, list[str]] = {}
    same = {r["kernel"] for r in records if r.get("type") == "same-code"}
    for r in records:
        t = r.get("type")
        if t == "time" and r.get("ms") is not None and r.get("variant") != BASELINE:
            key = (r["kernel"], r["label"])
            row = by.setdefault(key, Row(r["kernel"], r["label"], dict(r["sizes"])))
            if r["variant"] == "default":
                row.ms, row.samples = r["ms"], r.get("samples", 0)
            elif r["variant"] == "naive":
                row.naive_ms = r["ms"]
            elif r["variant"] == "cublas":
                row.cublas_ms = r["ms"]
        elif t == "check" and r.get("variant") == "default":
            checks.setdefault(r["kernel"], {})[r["label"]] = r.get("verdict", "?")
        elif t == "cpu" and r.get("seconds") is not None:
            cpu[(r["kernel"], r["label"])] = r
        elif t == "error" and not candidates_side(r.get("variant")):  # candidates: their own section
            notes.setdefault(r.get("kernel", ""), []).append(str(r.get("message", ""))[:120])
    for kernel in list(notes) + list(checks):  # a kernel that failed before any timing still gets a row
        if kernel in SIZES and not any(k == kernel for k, _ in by):
            by[(kernel, "EX")] = Row(kernel, "EX", dict(SIZES[kernel][0]))
    for (kernel, label), row in by.items():
        row.checks = checks.get(kernel, {})
        row.same_code = kernel in same
        row.note = "; ".join(notes.get(kernel, []))
        row.cpu_s, row.cpu_estimated = _cpu_seconds(kernel, label, row.sizes, cpu)
    order = {k: i for i, k in enumerate(SIZES)}
    return sorted(by.values(), key=lambda r: (order.get(r.kernel, 99), r.label != "EX", r.label))


def _cpu_seconds(kernel: str, label: str, sizes: Mapping[str, int],
                 cpu: Mapping[tuple[str, str], Mapping[str, Any]]) -> tuple[float | None, bool]:
    """The gcc time at ``sizes``: measured there, else scaled by the flop model from the nearest run."""
    cands = [r for (k, _), r in cpu.items() if k == kernel]
    exact = [r for r in cands if r["sizes"] == dict(sizes)]
    if exact:
        return float(exact[0]["seconds"]), False
    if not cands:
        return None, False
    best = max(cands, key=lambda r: flops(kernel, r["sizes"]))
    f = flops(kernel, best["sizes"])
    return (float(best["seconds"]) * flops(kernel, sizes) / f, True) if f else (None, False)


def _fmt(v: float | None, spec: str = ".3g", suffix: str = "") -> str:
    return "" if v is None else f"{v:{spec}}{suffix}"


HEADER = ("| kernel | size | time ms | GB/s | GFLOP/s | bound | % of roof | vs gcc -O3 1 core | naive ms | vs naive "
          "| vs cuBLAS | correct (EX, off1, off2, BIG) | samples | note |")


def markdown_table(rs: list[Row], ceil: Ceilings) -> str:
    """The results table (markdown)."""
    lines = [HEADER, "|" + "---|" * (HEADER.count("|") - 1)]
    for r in rs:
        mem = r.memory_bound(ceil)
        if mem:
            roof = (r.bytes / (r.ms * 1e-3) / ceil.copy_bw * 100) if r.ms and ceil.copy_bw else None
        else:
            roof = (r.flops / (r.ms * 1e-3) / ceil.dgemm * 100) if r.ms and ceil.dgemm else None
        integer = MODEL[r.kernel].integer
        cpu = (r.cpu_s * 1e3 / r.ms) if r.cpu_s and r.ms else None
        vs_naive = r.naive_ms / r.ms if r.naive_ms and r.ms else None
        vs_cublas = r.cublas_ms / r.ms if r.cublas_ms and r.ms else None
        checks = r.checks or {}
        correct = ", ".join(checks.get(k, "-") for k in ("EX", "off1", "off2", "BIG") if k != "BIG" or k in checks)
        lines.append(
            f"| {r.kernel} | {size_text(r.sizes)}{' (BIG)' if r.label == 'BIG' else ''} | {_fmt(r.ms, '.4g')} "
            f"| {_fmt(r.gbs(), '.4g')} | {_fmt(r.gflops(), '.4g')}{' int' if integer else ''} "
            f"| {'mem' if mem else 'fp64'} | {_fmt(roof, '.1f', '%')} "
            f"| {_fmt(cpu, '.3g', 'x')}{' (est)' if r.cpu_estimated and cpu else ''} "
            f"| {_fmt(r.naive_ms, '.4g') or '-'} | {_fmt(vs_naive, '.3g', 'x') or '-'}"
            f"{' (same code)' if r.same_code and vs_naive else ''} | {_fmt(vs_cublas, '.2f')} "
            f"| {correct} | {r.samples or ''} "
            f"| {r.note.replace('|', '/')} |")
    return "\n".join(lines)


def geomean(xs: Iterable[float]) -> float | None:
    """Geometric mean of the positive values (None if none)."""
    vals = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in vals) / len(vals)) if vals else None


def summary(rs: list[Row], ceil: Ceilings) -> str:
    """Lines under the table: ceilings, geomean speedups, counts."""
    ex = [r for r in rs if r.label == "EX"]
    g_naive = geomean(r.naive_ms / r.ms for r in ex if r.naive_ms and r.ms)
    g_cpu = geomean(r.cpu_s * 1e3 / r.ms for r in ex if r.cpu_s and r.ms)
    slower = [r.kernel for r in ex if r.naive_ms and r.ms and r.ms > r.naive_ms and not r.same_code]
    same = sorted({r.kernel for r in ex if r.same_code})
    failed = sorted({r.kernel for r in rs for v in (r.checks or {}).values() if v not in ("pass", "-", "no-ref")})
    unchecked = sorted({f"{r.kernel} {lab}" for r in rs for lab, v in (r.checks or {}).items() if v == "no-ref"})
    untimed = sorted({r.kernel for r in ex if not r.ms})
    out = [
        f"- Device: {ceil.device or '?'}; run {ceil.date or '?'}.",
        f"- Measured device-to-device copy bandwidth (read + write): {_fmt((ceil.copy_bw or 0) / 1e9 or None, '.0f')} GB/s; "
        f"best measured cuBLAS DGEMM: {_fmt((ceil.dgemm or 0) / 1e12 or None, '.1f')} TFLOP/s "
        f"(datasheet fp64 tensor: {SPEC_FP64_TENSOR / 1e12:.0f} TFLOP/s).",
        (f"- Geomean speedup over the naive mapping at EXTRALARGE: {_fmt(g_naive, '.2f', 'x') or 'n/a'} over "
         f"{sum(1 for r in ex if r.naive_ms and r.ms)} kernels; "
         f"slower than naive: {', '.join(slower) or 'none'}"
         + (f" (the same code as naive, so equal up to noise: {', '.join(same)})" if same else "") + "."
         if any(r.naive_ms for r in rs) else
         "- Speedup over the naive mapping: not measured (no naive times: --skip-naive, or its builds failed)."),
        f"- Geomean speedup over gcc -O3 on one core at EXTRALARGE: {_fmt(g_cpu, '.3g', 'x') or 'n/a'}.",
        f"- Kernels with a correctness check not passed: {', '.join(failed) or 'none'}; not checked (the CPU "
        f"reference did not finish in the budget): {', '.join(unchecked) or 'none'}.",
        f"- Not timed at EXTRALARGE (killed, failed or out of budget; their checks did not run): "
        f"{', '.join(untimed) or 'none'}.",
    ]
    return "\n".join(out)


VERDICT_RANK = {"pass": 0, "precision?": 1, "no-ref": 2, "-": 3, "FAIL": 4}
"""Worse is larger: the Candidates section shows a build's worst verdict over the check sizes."""
CAND_HEADER = "| kernel | variant | EX ms | vs opt | against | check (worst) | fastest passing | note |"
SAME_CHILD = "opt-again"
"""The 'against' cell of a speedup over the baseline timed in the candidates' own child."""
OTHER_CHILD = "opt, 1st child"
"""The 'against' cell of a speedup over opt's time from its own child (no baseline: drift-biased)."""


def _variant_name(variant: str) -> str:
    return {"default": "opt", BASELINE: "opt-again"}.get(variant, variant)


def candidates_table(records: list[Mapping[str, Any]]) -> str:
    """The "Candidates" section's table: for every kernel with a candidate build (or a candidate error),
    one row per build, opt first, then opt-again (``BASELINE``, when the candidates' child timed it),
    then the candidates: its EX time; 'vs opt', the baseline's time over the build's, and 'against',
    which baseline: ``opt-again`` (same child) when it was timed, else opt's own time from the other
    child (``opt, 1st child``, with a note: biased by the drift between children).  opt-again's own
    'vs opt' is opt's time over it, the drift itself (>1x: the second child measured the same build
    faster).  Then its worst check verdict over the kernel's check sizes (a size it was not checked at
    counts as '-'; opt-again is opt's library and shows 'as opt'), and ``**yes**`` on the build with
    the best 'vs opt' (opt counts 1x; ties go to opt) that passed every check (a FAIL, unchecked or
    untimed build never is).  '' when no record names a candidate."""
    order = {k: i for i, k in enumerate(SIZES)}
    cand = [r for r in records if is_candidate(r.get("variant"))]
    kernels = sorted({r.get("kernel", "") for r in cand}, key=lambda k: (order.get(k, 99), k))
    if not kernels:
        return ""
    ms: dict[tuple[str, str], float | None] = {}
    verdicts: dict[tuple[str, str], dict[str, str]] = {}
    labels: dict[str, set[str]] = {}
    notes: dict[tuple[str, str], list[str]] = {}
    for r in records:
        t, k, v = r.get("type"), r.get("kernel", ""), r.get("variant", "")
        if t == "time" and r.get("label") == "EX":
            ms[(k, v)] = r.get("ms")
            if r.get("error"):
                notes.setdefault((k, v), []).append(str(r["error"])[:120])
        elif t == "check":
            verdicts.setdefault((k, v), {})[r["label"]] = r.get("verdict", "?")
            labels.setdefault(k, set()).add(r["label"])
        elif t == "cpu":  # one reference job per check size: the sizes every build should pass
            labels.setdefault(k, set()).add(r["label"])
        elif t == "error" and (v == "default" or candidates_side(v)):
            notes.setdefault((k, v), []).append(str(r.get("message", ""))[:120])
    lines = [CAND_HEADER, "|" + "---|" * (CAND_HEADER.count("|") - 1)]
    for k in kernels:
        opt, again = ms.get((k, "default")), ms.get((k, BASELINE))
        variants = (["default"] + ([BASELINE] if (k, BASELINE) in ms or (k, BASELINE) in notes else [])
                    + sorted({str(r["variant"]) for r in cand if r.get("kernel", "") == k}))
        worst = {}
        for v in variants:
            got = verdicts.get((k, v), {})
            seen = labels.get(k, set()) | set(got)
            worst[v] = max((got.get(lab, "-") for lab in seen), key=lambda x: VERDICT_RANK.get(x, 4), default="-")
        # (the baseline's time, which one) per build: every speedup within one child where it can be
        base: dict[str, tuple[float | None, str]] = {"default": (opt, ""), BASELINE: (opt, OTHER_CHILD)}
        speed: dict[str, float | None] = {}
        for v in variants:
            if is_candidate(v):
                base[v] = (again, SAME_CHILD) if again else (opt, OTHER_CHILD)
            b, t = base[v][0], ms.get((k, v))
            speed[v] = b / t if b and t else None
        passing = [v for v in variants if v != BASELINE and ms.get((k, v)) and worst[v] == "pass"]
        if passing and all(speed[v] is not None for v in passing):
            best: str | None = max(passing, key=lambda v: speed[v] or 0.0)
        else:  # no baseline and no opt time: the candidates' times, all from one child
            best = min(passing, key=lambda v: ms[(k, v)] or 0.0) if passing else None
        for v in variants:
            t = ms.get((k, v))
            against = base[v][1] if speed[v] is not None else ""
            note = notes.get((k, v), []) + (
                ["no opt-again timed: vs opt from the 1st child (drift-biased)"]
                if is_candidate(v) and against == OTHER_CHILD else [])
            check = "as opt" if v == BASELINE else worst[v]
            lines.append(f"| {k or '?'} | {_variant_name(v).replace('|', '/')} | {_fmt(t, '.4g') or '-'} "
                         f"| {_fmt(speed[v], '.3g', 'x') or '-'} | {against} | {check} "
                         f"| {'**yes**' if v == best else ''} | {'; '.join(note).replace('|', '/')} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# Picture and HTML


def roofline_png(rs: list[Row], ceil: Ceilings) -> bytes:
    """A roofline chart (PNG bytes): achieved GFLOP/s against intensity, optimised and naive."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 7), dpi=110)
    ai = [intensity(r.kernel, r.sizes) for r in rs] or [1.0]
    lo, hi = min(ai + [0.05]) / 2, max(ai + [1000.0]) * 2
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    bw = ceil.copy_bw or 4.3e12
    peak = ceil.dgemm or SPEC_FP64_TENSOR
    ax.plot(xs, [min(bw * x, peak) / 1e9 for x in xs], "k-", lw=2,
            label=f"measured: copy {bw / 1e9:.0f} GB/s, DGEMM {peak / 1e12:.1f} TFLOP/s")
    ax.plot(xs, [min(bw * x, SPEC_FP64_TENSOR) / 1e9 for x in xs], "k:", lw=1,
            label=f"fp64 tensor datasheet {SPEC_FP64_TENSOR / 1e12:.0f} TFLOP/s")
    for r, x in zip(rs, ai):
        opt, naive = r.gflops(), r.gflops(r.naive_ms) if r.naive_ms else None
        if opt:
            ax.scatter([x], [opt], c="tab:blue", s=28, zorder=3)
            ax.annotate(r.kernel + (" (BIG)" if r.label == "BIG" else ""), (x, opt), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
        if naive:
            ax.scatter([x], [naive], facecolors="none", edgecolors="tab:red", s=28, zorder=3)
            if opt:
                ax.plot([x, x], [naive, opt], color="0.7", lw=0.8, zorder=2)
    ax.scatter([], [], c="tab:blue", s=28, label="optimised (default pipeline)")
    ax.scatter([], [], facecolors="none", edgecolors="tab:red", s=28, label="naive (map-gpu only)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (operations / compulsory byte)")
    ax.set_ylabel("achieved GFLOP/s (GOP/s for integer kernels)")
    ax.set_title(f"Roofline: {ceil.device or 'GPU'} {ceil.date}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _md_to_html_table(md: str) -> str:
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    if not lines:
        return ""
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    head, body = cells[0], cells[2:]
    out = ["<table>", "<tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in body]
    out.append("</table>")
    return "\n".join(out)


def html_report(title: str, png: bytes | None, table_md: str, summary_md: str = "", extra: str = "") -> str:
    """A self-contained HTML page: the picture (base64) and the table."""
    img = (f'<img alt="roofline" src="data:image/png;base64,{base64.b64encode(png).decode()}">' if png
           else "<p>(no picture: matplotlib is not installed)</p>")
    items = "".join(f"<li>{html.escape(ln.lstrip('- '))}</li>" for ln in summary_md.splitlines() if ln.strip())
    return ("<!doctype html>\n<html><head><meta charset='utf-8'>"
            f"<title>{html.escape(title)}</title><style>body{{font-family:sans-serif;margin:2em}}"
            "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #bbb;padding:2px 6px}"
            "img{max-width:100%}</style></head><body>\n"
            f"<h1>{html.escape(title)}</h1>\n<ul>{items}</ul>\n{img}\n{_md_to_html_table(table_md)}\n"
            f"{extra}\n</body></html>\n")


def parse_kernels(text: str | None) -> list[str]:
    """The kernels a ``--kernels a,b`` option names (``fdtd_2d`` or ``fdtd-2d``), in table order; all if empty."""
    names = list(SIZES)
    if not text:
        return names
    want = [w.strip().replace("_", "-") for w in text.split(",") if w.strip()]
    bad = [w for w in want if w not in names]
    if bad:
        raise SystemExit(f"unknown kernel(s) {bad}; known: {', '.join(names)}")
    return [n for n in names if n in want]

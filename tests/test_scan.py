"""Tests for passes/scan.py: running values made blocked scans, exact where the operator is, and kept
only where the dependence test proves the chunk loops parallel."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from passes import REGISTRY, deps, scan
from transpile import cuda, ir, pipeline
from transpile.frontend.c import parse_source
from transpile.ir import interp
from transpile.verify import Options, verify_module


def _module(src: str) -> ir.Module:
    return parse_source(textwrap.dedent(src), "k.c")


def _scanned(m: ir.Module, chunk: int, reassociate: bool = True) -> ir.Module:
    k = m.kernels[0]
    return ir.Module(m.funcs, (scan.run(k, reassociate=reassociate, chunk=chunk),))


def _chunk_loops(k: ir.Kernel) -> list[ir.For]:
    return [s for s in k.body if isinstance(s, ir.For) and s.var.startswith("chunk")]


def _run(m: ir.Module, args: dict[str, object], shuffle: int | None = None) -> dict[str, np.ndarray]:
    return interp.run(m, m.kernels[0].name, {k: np.copy(v) if isinstance(v, np.ndarray) else v
                                             for k, v in args.items()}, shuffle=shuffle)


PREFIX = """\
    void k(int n, float a[n], const float b[n]) {
      a[0] = b[0];
      for (int i = 1; i < n; i++)
        a[i] = a[i - 1] + b[i];
    }"""

INT_PREFIX = """\
    void k(int n, int a[n], const int b[n]) {
      for (int i = 1; i < n; i++)
        a[i] = b[i] + a[i - 1];
    }"""

RUNNING_TOTAL = """\
    float k(int n, const float x[n], float y[n]) {
      float s = 1.5f;
      for (int i = 0; i < n; i++) {
        s += x[i];
        y[i] = 2.0f * s;
      }
      return s;
    }"""

EXCLUSIVE = """\
    long k(int n, const int x[n], long y[n]) {
      long s = 0;
      for (int i = 0; i < n; i++) {
        y[i] = s;
        s = s + x[i];
      }
      return s;
    }"""

RUNNING_MAX = """\
    void k(int n, const double x[n], double m[n]) {
      double best = -1e300;
      for (int i = 0; i < n; i++) {
        best = fmax(best, x[i]);
        m[i] = best;
      }
    }"""

OFFSET_ROW = """\
    void k(int n, int r, double a[4][n + 1], const double b[n]) {
      for (int i = 0; i < n; i++)
        a[r][i + 1] = a[r][i] - b[i] * b[i];
    }"""

INT_MIN_SELECT = """\
    void k(int n, const int x[n], int lo[n]) {
      int m = 1000000;
      for (int i = 0; i < n; i++) {
        m = x[i] < m ? x[i] : m;
        lo[i] = m;
      }
    }"""


def _args(src: str, n: int, rng: np.random.Generator) -> dict[str, object]:
    if src is PREFIX:
        return {"n": n, "a": rng.standard_normal(n).astype(np.float32), "b": rng.standard_normal(n).astype(np.float32)}
    if src is INT_PREFIX:
        return {"n": n, "a": rng.integers(-9, 9, n).astype(np.int32), "b": rng.integers(-9, 9, n).astype(np.int32)}
    if src is RUNNING_TOTAL:
        return {"n": n, "x": rng.standard_normal(n).astype(np.float32), "y": np.zeros(n, np.float32),
                "result": np.zeros(1, np.float32)}
    if src is EXCLUSIVE:
        return {"n": n, "x": rng.integers(-99, 99, n).astype(np.int32), "y": np.zeros(n, np.int64),
                "result": np.zeros(1, np.int64)}
    if src is RUNNING_MAX:
        return {"n": n, "x": rng.standard_normal(n), "m": np.zeros(n)}
    if src is OFFSET_ROW:
        return {"n": n, "r": 2, "a": rng.standard_normal((4, n + 1)), "b": rng.standard_normal(n)}
    assert src is INT_MIN_SELECT
    return {"n": n, "x": rng.integers(-999, 999, n).astype(np.int32), "lo": np.zeros(n, np.int32)}


EXACT = {id(INT_PREFIX), id(EXCLUSIVE), id(RUNNING_MAX), id(INT_MIN_SELECT)}


def test_registered() -> None:
    assert REGISTRY["scan"] is scan


@pytest.mark.parametrize("src", [PREFIX, INT_PREFIX, RUNNING_TOTAL, EXCLUSIVE, RUNNING_MAX, OFFSET_ROW,
                                 INT_MIN_SELECT],
                         ids=["prefix", "int_prefix", "running_total", "exclusive", "running_max", "offset_row",
                              "int_min_select"])
@pytest.mark.parametrize("chunk", [2, 3, 64])
def test_scan_computes_what_the_loop_does(src: str, chunk: int) -> None:
    m = _module(src)
    got = _scanned(m, chunk)
    k = got.kernels[0]
    assert len(_chunk_loops(k)) == 2 * scan.LEVELS + 1
    assert sum(isinstance(s, ir.Alloc) for s in k.body) == scan.LEVELS
    rng = np.random.default_rng(chunk)
    # sizes that fill 0, 1 and several chunks at every level (chunk 2: 2^3 iterations a top chunk)
    for n in (0, 1, 2, 3, 5, 8, 17, 40, 129, 300) if src is not PREFIX else (1, 2, 3, 5, 8, 17, 40, 129, 300):
        args = _args(src, n, rng)
        want = _run(m, args)
        for seed in (1, 2):
            have = _run(got, args, shuffle=seed)  # the chunk loops in a random order
            for name, w in want.items():
                if id(src) in EXACT:
                    assert np.array_equal(have[name], w), (n, name)
                else:
                    assert np.allclose(have[name], w, rtol=1e-4, atol=1e-4), (n, name)


def test_chunk_loops_are_parallel_and_the_tail_sequential() -> None:
    k = _scanned(_module(PREFIX), 64).kernels[0]
    ids, par = deps.loop_ids(k), deps.parallel_loops(k, deps.analyze(k))
    chunks = _chunk_loops(k)
    parallel = [c for c in chunks if ids[id(c)] in par]
    assert len(parallel) == 2 * scan.LEVELS and len(chunks) - len(parallel) == 1


def test_pipeline_maps_the_chunks() -> None:
    lowered = pipeline.lower(_module(PREFIX))
    par = [n for n in ir.walk(lowered.kernels[0]) if isinstance(n, ir.For) and n.par is not None]
    assert len(par) == 2 * scan.LEVELS


def test_float_sum_needs_reassociation_but_integers_and_max_do_not() -> None:
    assert not _chunk_loops(scan.run(_module(PREFIX).kernels[0], reassociate=False))
    for src in (INT_PREFIX, RUNNING_MAX, EXCLUSIVE):
        assert _chunk_loops(scan.run(_module(src).kernels[0], reassociate=False))


@pytest.mark.parametrize("src", [
    # not affine in the running value
    "void k(int n, float a[n], const float b[n]) { for (int i = 1; i < n; i++) a[i] = a[i - 1] * a[i - 1] + b[i]; }",
    # a linear recurrence whose coefficient reads what the loop writes
    "void k(int n, float a[n], const float b[n]) { for (int i = 1; i < n - 1; i++) a[i] = a[i - 1] * a[i + 1] + b[i]; }",
    # the term reads what the loop writes
    "void k(int n, float a[n]) { for (int i = 1; i < n - 1; i++) a[i] = a[i - 1] + a[i + 1]; }",
    # another statement reads what the previous iteration wrote: phase 3's chunks would race
    "void k(int n, float s, const float x[n], float y[n]) { for (int i = 1; i < n; i++) { s += x[i]; "
    "y[i] = y[i - 1] + s; } }",
    # two running values
    "void k(int n, const float x[n], float y[n]) { float s = 0, t = 0; for (int i = 0; i < n; i++) { s += x[i]; "
    "t += s; y[i] = t; } }",
    # a bound that is not a parameter
    "void k(int n, float a[n], const int m[1]) { for (int i = 1; i < m[0]; i++) a[i] = a[i - 1] + 1.0f; }",
], ids=["quadratic", "coefficient_reads_written", "term_reads_written", "race", "two_values", "bound"])
def test_not_a_scan(src: str) -> None:
    k = _module(src).kernels[0]
    assert not _chunk_loops(scan.run(k))


def test_reduction_alone_is_left_to_reduce_gpu() -> None:
    """A total nobody reads per iteration is a reduction: scanning it would only add launches."""
    k = _module("float k(int n, const float x[n]) { float s = 0; for (int i = 0; i < n; i++) s += x[i]; "
                "return s; }").kernels[0]
    assert scan.run(k) is k


@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="needs gcc and g++")
@pytest.mark.parametrize("src", [RUNNING_TOTAL, INT_MIN_SELECT], ids=["running_total", "int_min_select"])
def test_emitted_scan_verified_with_many_chunks(src: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA of every level, run by the simulator against gcc: chunks of 2 iterations, so the
    verifier's small shapes (n = 17 ...) fill several chunks at each of the three levels."""
    monkeypatch.setattr(scan, "K", 2)
    path = tmp_path / "k.c"
    path.write_text(textwrap.dedent(src))
    module = parse_source(path.read_text(), str(path))
    lowered = pipeline.lower(module)
    assert sum(isinstance(s, ir.Alloc) for s in lowered.kernels[0].body) == scan.LEVELS
    code = cuda.emit(lowered, source=path.name)
    opts = Options(seed=3, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, code, source=path, lowered=lowered, options=opts)
    assert report.ok and report.stage("c").status == "pass", report.summary()


# ---------------------------------------------------------------------------
# Linear recurrences: x = A(i) * x + B(i)

DECAY = """\
    void k(int n, float y[n], const float x[n]) {
      for (int i = 1; i < n; i++)
        y[i] = 0.9f * y[i - 1] + 0.1f * x[i];
    }"""

FIRST_ORDER = """\
    void k(int n, double a[n], const double b[n], const double c[n]) {
      for (int i = 1; i < n; i++)
        a[i] = a[i - 1] * b[i] + c[i];
    }"""

CARRIED = """\
    double k(int n, const double b[n], double a[n]) {
      double s = 0.25;
      for (int i = 0; i < n; i++) {
        s = s * 0.5 + b[i];
        a[i] = s;
      }
      return s;
    }"""

HORNER = """\
    double k(int n, const double c[n], double x) {
      double s = 1.0;
      for (int i = 0; i < n; i++)
        s = s * x + c[i];
      return s;
    }"""

SUBTRACTED = """\
    void k(int n, double y[n + 1], const double x[n], const double w[n]) {
      for (int i = 0; i < n; i++)
        y[i + 1] = x[i] - (w[i] * y[i] - 2.0 * x[i]) * 0.5;
    }"""

COMPOUND = """\
    void k(int n, double s1, double a[n], const double b[n], const double c[n]) {
      for (int i = 1; i < n; i++)
        a[i] = a[i - 1] + s1 + b[i] + c[i];
    }"""

LINEAR = {"decay": DECAY, "first_order": FIRST_ORDER, "carried": CARRIED, "horner": HORNER, "subtracted": SUBTRACTED,
          "compound": COMPOUND}


def _linear_args(src: str, n: int, rng: np.random.Generator) -> dict[str, object]:
    k = _module(src).kernels[0]
    args: dict[str, object] = {}
    for p in k.params:
        if not isinstance(p.ty, ir.ArrayType):
            args[p.name] = n if p.name == "n" else 0.9
            continue
        size = 1 if p.name == "result" else n + 1 if p.name == "y" and src is SUBTRACTED else n
        dtype = np.float32 if p.ty.elem.bits == 32 else np.float64
        # coefficients below 1 in magnitude: the recurrence stays bounded, so a reordered composition's
        # rounding stays small
        args[p.name] = (rng.uniform(-0.95, 0.95, size) if p.name in ("b", "w") and src is not CARRIED
                        else rng.standard_normal(size)).astype(dtype)
    return args


@pytest.mark.parametrize("name", sorted(LINEAR))
@pytest.mark.parametrize("chunk", [2, 3, 64])
def test_linear_recurrence_computes_what_the_loop_does(name: str, chunk: int) -> None:
    """Each chunk's maps composed, the chunks' maps composed in order, each chunk run from the value
    before it: the loop's results, with the chunk loops in a random order."""
    src = LINEAR[name]
    m = _module(src)
    got = _scanned(m, chunk)
    k = got.kernels[0]
    # phases 1 and 2, and phase 3 unless nothing reads the value per iteration (Horner's rule)
    assert len(_chunk_loops(k)) == (2 if src is HORNER else 3)
    assert sum(isinstance(s, ir.Alloc) for s in k.body) == 2
    rng = np.random.default_rng(chunk)
    for n in (0, 1, 2, 3, 5, 8, 17, 40, 129, 300):
        if src in (DECAY, COMPOUND) and n == 0:
            continue
        args = _linear_args(src, n, rng)
        want = _run(m, args)
        for seed in (1, 2):
            have = _run(got, args, shuffle=seed)
            for key, w in want.items():
                assert np.allclose(have[key], w, rtol=1e-4 if src is DECAY else 1e-9, atol=1e-5 if src is DECAY
                                   else 1e-12), (name, n, key)


def test_linear_recurrence_needs_reassociation() -> None:
    for src in LINEAR.values():
        assert not _chunk_loops(scan.run(_module(src).kernels[0], reassociate=False))


def test_linear_recurrence_chunks_are_parallel_in_the_pipeline() -> None:
    for src in (DECAY, CARRIED):
        lowered = pipeline.lower(_module(src))
        par = [n for n in ir.walk(lowered.kernels[0]) if isinstance(n, ir.For) and n.par is not None]
        assert len(par) == 2, src


@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="needs gcc and g++")
@pytest.mark.parametrize("name", ["decay", "carried"])
def test_emitted_linear_scan_verified_with_many_chunks(name: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA of the three phases against gcc on the simulator, chunks of 2 iterations."""
    monkeypatch.setattr(scan, "K", 2)
    path = tmp_path / "k.c"
    path.write_text(textwrap.dedent(LINEAR[name]))
    module = parse_source(path.read_text(), str(path))
    lowered = pipeline.lower(module)
    assert sum(isinstance(s, ir.Alloc) for s in lowered.kernels[0].body) == 2
    code = cuda.emit(lowered, source=path.name)
    opts = Options(seed=5, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, code, source=path, lowered=lowered, options=opts)
    assert report.ok and report.stage("c").status == "pass", report.summary()


@pytest.mark.parametrize("src", [
    "void k(int n, double a[n]) { for (int i = 1; i < n; i++) a[i] += a[i - 1] * 2.0; }",
    "void k(int n, double a[n], const double b[n]) { for (int i = 1; i < n; i++) a[i] += a[i - 1] * b[i]; }",
], ids=["scaled", "s321"])
def test_the_previous_element_in_the_term_is_not_a_running_sum(src: str) -> None:
    """``a[i] += a[i - 1] * b[i]`` reads the running value in its term: a linear recurrence (the running-value
    scan once took it as a sum of ``a[i] * b[i]``, with ``a[i]`` standing for ``a[i - 1]``)."""
    m = _module(src)
    got = _scanned(m, 3)
    assert sum(isinstance(s, ir.Alloc) for s in got.kernels[0].body) == 2  # part_a, part_b
    rng = np.random.default_rng(4)
    for n in (1, 2, 4, 7, 20):
        args = {"n": n, "a": rng.uniform(-1, 1, n), "b": rng.uniform(-0.9, 0.9, n)}
        if "b[n]" not in src:
            del args["b"]
        want = _run(m, args)
        for seed in (1, 2):
            assert np.allclose(_run(got, args, shuffle=seed)["a"], want["a"], rtol=1e-9, atol=1e-12), n

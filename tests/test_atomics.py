"""Scatter updates made atomic (passes/atomics.py, map-gpu's ``atomic(...)`` marks, the emitter's
``atomicAdd``): a histogram's loop runs on the whole grid instead of one thread, and only where
every dependence it carries is a commuting update."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.interp_check import assert_sim_matches_interpreter, sim_library
from transpile import cuda, frontend, ir, pipeline
from transpile.diagnostics import TranspileError
from transpile.ir import check as ircheck
from transpile.ir import text
from transpile.verify import Options, verify_module

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")
ROOT = Path(__file__).resolve().parent.parent

# Integer bins of a 2-D index array, weighted float bins, a 64-bit count taken down and an unsigned
# one; and a plain map in the same kernel.
WEIGHTED = """
void whist(int n, int m, int nb, int A[n][m], double W[n][m], double H[nb], long long C[nb], unsigned U[nb],
           double out[n])
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++) {
      int b = A[i][j] % nb;
      if (b < 0)
        b = -b;
      H[b] += W[i][j];
      C[b] -= 3;
      U[b] -= 2u;
    }
  for (int i = 0; i < n; i++)
    out[i] = W[i][0] * 2.0;
}
"""
COUNTS = """
void counts(int n, int nb, int data[n], int h[nb])
{
  for (int i = 0; i < n; i++)
    h[(data[i] % nb + nb) % nb]++;
}
"""
# A row's sum into its bin: the inner loop is a reduction into one element (a local, then one atomic).
ROW_BINS = """
void rowbin(int n, int m, int nb, int B[n], double X[n][m], double H[nb], double Y[n])
{
  for (int i = 0; i < n; i++) {
    Y[i] = X[i][0];
    for (int j = 0; j < m; j++)
      H[(B[i] % nb + nb) % nb] -= X[i][j];
  }
}
"""
# The loop also reads the bins: its iterations do not commute.
READ_BACK = """
void readback(int n, int nb, int data[n], int h[nb], int seen[n])
{
  for (int i = 0; i < n; i++) {
    int b = (data[i] % nb + nb) % nb;
    seen[i] = h[b];
    h[b] += 1;
  }
}
"""


def _load(tmp_path: Path, src: str, name: str = "k.c") -> ir.Module:
    path = tmp_path / name
    path.write_text(src)
    return frontend.load(path)


def _marks(m: ir.Module) -> list[tuple[str, str | None, tuple[str, ...]]]:
    return [(n.var, n.par, n.atomic) for n in ir.walk(m) if isinstance(n, ir.For) and n.atomic]


def test_histogram_loops_run_on_the_grid_with_atomic_updates(tmp_path: Path) -> None:
    low = pipeline.lower(_load(tmp_path, WEIGHTED))
    assert _marks(low) == [("i", "y", ("C", "H", "U")), ("j", "x", ("C", "H", "U"))]
    code = cuda.emit(low, source="k.c")
    assert "atomicAdd(&H[b], W[(long long)i * m + j]);" in code
    assert "atomicAdd((unsigned long long *)&C[b], 0ull - (unsigned long long)(" in code  # 64-bit: as unsigned
    assert "atomicSub(&U[b], 2u);" in code
    shown = text.show(low)
    assert "par(x) atomic(C, H, U)" in shown and text.parse(shown) == low


def test_a_reduction_into_a_bin_updates_it_once(tmp_path: Path) -> None:
    low = pipeline.lower(_load(tmp_path, ROW_BINS))
    assert _marks(low) == [("i", "x", ("H",))]
    code = cuda.emit(low, source="k.c")
    assert "H_part += X[(long long)i * m + j];" in code
    assert code.count("atomicAdd(&H[(B[i] % nb + nb) % nb], -(H_part));") == 1


def test_what_atomics_do_not_cover_stays_sequential(tmp_path: Path) -> None:
    assert not _marks(pipeline.lower(_load(tmp_path, READ_BACK)))
    # Float bins need reassociation (the order of float additions changes the rounding)...
    assert not _marks(pipeline.lower(_load(tmp_path, WEIGHTED), reassociate=False))
    # ...integer ones do not; the naive baseline maps no scatter.
    assert _marks(pipeline.lower(_load(tmp_path, COUNTS), reassociate=False)) == [("i", "x", ("h",))]
    assert not _marks(pipeline.lower(_load(tmp_path, COUNTS), naive=True))
    # symm's triangular update of C[k][j] over i could run atomically, but k and j are parallel on
    # their own: i stays the thread's loop (the tiled product), as before.
    assert not _marks(pipeline.lower(frontend.load(ROOT / "tests" / "kernels" / "symm.c")))


def test_atomic_marks_are_proven_again() -> None:
    ok = """kernel k(i32 n, i32 nb, in i32 d[n], inout i32 h[nb], inout i32 g[nb]) {
  launch {
    for i in 0..n par(x) atomic(h) {
      h[d[i] % nb] += 1;
    }
  }
}
"""
    ircheck.check(text.parse(ok))
    # A loop whose other array also carries a dependence.
    with pytest.raises(TranspileError, match=r"marked 'atomic\(h\)' but carries a dependence on 'g'"):
        ircheck.check(text.parse(ok.replace("h[d[i] % nb] += 1;", "h[d[i] % nb] += 1;\n      g[d[i] % nb] += 1;")))
    # The bins read by an update's term, or other than by an update.
    with pytest.raises(TranspileError, match=r"an update of 'h' reads 'h'"):
        ircheck.check(text.parse(ok.replace("h[d[i] % nb] += 1;", "h[d[i] % nb] += h[0];")))
    with pytest.raises(TranspileError, match=r"accessed other than by an update"):
        ircheck.check(text.parse(ok.replace("h[d[i] % nb] += 1;", "if (h[0] > 0) {\n        h[d[i] % nb] += 1;\n      }")))
    # Multiplication does not commute with the other updates as an atomic add.
    with pytest.raises(TranspileError, match=r"accessed other than by an update"):
        ircheck.check(text.parse(ok.replace("h[d[i] % nb] += 1;", "h[d[i] % nb] *= 2;")))
    with pytest.raises(TranspileError, match=r"marks a grid 'par\(x\|y\|z\)' loop"):
        text.parse(ok.replace(" par(x) atomic(h)", " atomic(h)"))


@needs_gxx
@pytest.mark.parametrize("src", [WEIGHTED, COUNTS, ROW_BINS], ids=["weighted", "counts", "row-bins"])
def test_atomic_kernels_match_the_interpreter(tmp_path: Path, src: str) -> None:
    module = _load(tmp_path, src)
    low = pipeline.lower(module)
    lib = sim_library(cuda.emit(low, source="k.c"), tmp_path)
    k = module.kernels[0]
    rng = np.random.default_rng(11)
    for n, m, nb in ((1, 1, 1), (37, 5, 3), (300, 9, 7), (64, 64, 1)):
        sizes = {"n": n, "m": m, "nb": nb}
        args: dict[str, object] = {p.name: np.int32(sizes[p.name]) for p in k.params if p.name in sizes}
        for p in k.params:
            if isinstance(p.ty, ir.ArrayType):
                dims = tuple(int(sizes[d.name]) for d in p.ty.dims)  # type: ignore[union-attr]
                dt = {ir.I32: np.int32, ir.I64: np.int64, ir.U32: np.uint32}.get(p.ty.elem, np.float64)
                if dt == np.float64:
                    args[p.name] = rng.uniform(-1, 1, dims)
                else:
                    args[p.name] = rng.integers(-1000, 1000, dims).astype(dt)
        # (float bins: the interpreter's order against the threads' is within the differential's tolerance
        # for these few terms a bin)
        assert_sim_matches_interpreter(lib, module, args, [p.name for p in k.params], f"n={n}, m={m}, nb={nb}")


@needs_gxx
def test_the_verifier_passes_them_and_finds_a_plain_update(tmp_path: Path) -> None:
    spec = ROOT / "examples" / "specs" / "histogram.ir"
    module = text.parse(spec.read_text())
    low = pipeline.lower(module)
    assert _marks(low) == [("i", "x", ("hist",))]
    code = cuda.emit(low, source=spec.name)
    opts = Options(seed=5, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, code, source=spec, lowered=low, options=opts)
    assert report.ok and report.stage("c").status == "pass", report.summary()
    # The bins fit in shared memory at the verifier's sizes: both forms ran (run G: global bins).
    # (the bin's local b = data[i] % nbins is propagated into the subscripts: passes/constprop.py)
    assert "atomicAdd(&hist_bins[data[i] % nbins], 1);" in code and "atomicAdd(&hist[data[i] % nbins], 1);" in code
    # The global form with a plain read-modify-write: blocks race on the bins (found by run G).
    plain = code.replace("atomicAdd(&hist[data[i] % nbins], 1);", "hist[data[i] % nbins] += 1;")
    assert plain != code
    (report,) = verify_module(module, plain, source=spec, lowered=low, options=opts)
    assert not report.ok and "race" in report.summary()
    # The shared form without the barrier after zeroing the bins: some thread updates a bin another
    # thread zeroes afterwards.
    unsynced = code.replace("= (int)0;\n    }\n    __syncthreads();", "= (int)0;\n    }\n", 1)
    assert unsynced != code
    (report,) = verify_module(module, unsynced, source=spec, lowered=low, options=opts)
    assert not report.ok
    # The global form crashing the simulator (a store through null; only run G takes that form at these
    # sizes): reported as that run's failure, not an exception of the verifier.
    crashing = code.replace("} else {  // bins in global memory", "} else {  // bins in global memory\n    *(volatile int *)nullptr = 1;", 1)
    assert crashing != code
    (report,) = verify_module(module, crashing, source=spec, lowered=low, options=opts)
    assert not report.ok and "global-bins call" in report.summary(), report.summary()
    # NOTE: a plain update of the shared bins is not found: the simulator's threads switch only at
    # barriers, shuffles and atomics, so a read-modify-write is never interleaved (docs/parallelism.md).


@needs_gxx
def test_shared_and_global_bins_match_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = _load(tmp_path, COUNTS)
    low = pipeline.lower(module)
    code = cuda.emit(low, source="k.c")
    assert "extern __shared__ __align__(16) unsigned char h_bins_raw[];" in code
    lib = sim_library(code, tmp_path)
    rng = np.random.default_rng(2)
    for limit in ("0", "64", "1000000"):  # global bins; shared up to 16 int bins; shared
        monkeypatch.setenv("TRANSPILE_PRIVATE_BINS_BYTES", limit)
        for n, nb in ((1, 1), (500, 7), (300, 16), (300, 17), (2000, 300)):
            args = {"n": np.int32(n), "nb": np.int32(nb), "data": rng.integers(-99, 99, n).astype(np.int32),
                    "h": rng.integers(-5, 5, nb).astype(np.int32)}
            assert_sim_matches_interpreter(lib, module, args, ["n", "nb", "data", "h"], f"n={n}, nb={nb}, limit {limit}")

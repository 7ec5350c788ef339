"""Parallel reductions: refined recognition, the ``reduce`` mark, its shuffled semantics, reduce-gpu and CUDA."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from passes import reduce_gpu, reductions
from tests import polybench
from tests.test_polybench import max_rel_err
from transpile import cuda, ir, pipeline
from transpile.diagnostics import TranspileError
from transpile.frontend import c as cfront
from transpile.ir import check as ircheck
from transpile.ir import interp, text

HAVE_NVCC = shutil.which("nvcc") is not None
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")

#: kernel -> the launch shapes its reductions get (passes.reduce_gpu rules (a)-(e)).
# trisolv, cholesky (and lu) are rescheduled right-looking first (passes/reschedule.py): no reduction left.
AFFECTED = {"durbin": {"block"}, "gramschmidt": {"block", "cols"},
            "ludcmp": {"block"}, "atax": {"chain"}, "gesummv": {"rows"}, "gemver": {"rows", "sweep"},
            "bicg": {"sweep"}, "mvt": {"sweep"}, "correlation": {"cols"}, "covariance": {"cols"},
            "floyd-warshall": {"block"}, "nussinov": {"rows"}}
#: Kernels whose reductions are integer sums (exact in any order): kept under --no-reassociate.
EXACT = {"floyd-warshall",  # passes/closure.py's count of the pivot row's and column's moved elements
         "nussinov"}  # an integer max


def found(src: str) -> list[tuple[str, str, str]]:
    (k,) = text.parse(src).kernels
    return [(r.loop_var, r.name, r.op) for r in reductions.analyze(k)]


def _module(name: str) -> ir.Module:
    spec = polybench.spec(name)
    return cfront.parse_file(str(spec.path), function=spec.function)


def _marked(m: ir.Module) -> list[ir.For]:
    return [n for n in ir.walk(m) if isinstance(n, ir.For) and n.reduce]


# ---------------------------------------------------------------------------
# Recognition: the term may read other elements of the accumulator's array


TRISOLV = """
kernel g(i32 n, in f64 L[n][n], inout f64 x[n]) {
  for i in 0..n { for j in 0..i { x[i] -= L[i][j] * x[j]; } }
}"""


def test_trisolv_like_reads_other_elements() -> None:
    assert found(TRISOLV) == [("j", "x", "+")]


def test_lu_like_update() -> None:
    assert found("""
kernel g(i32 n, inout f64 A[n][n]) {
  for i in 0..n { for j in i..n { for k in 0..i { A[i][j] -= A[i][k] * A[k][j]; } } }
}""") == [("k", "A", "+")]


def test_term_reading_an_element_the_loop_writes_is_not_a_reduction() -> None:
    # j runs up to i: at j == i the term reads x[i], a partial sum.
    assert found(TRISOLV.replace("0..i", "0..i + 1")) == []


def test_term_reading_the_accumulator_itself_is_not_a_reduction() -> None:
    assert found("""
kernel g(i32 n, inout f64 x[n], in f64 a[n]) {
  for i in 0..n { for j in 0..n { x[i] = x[i] + x[i] * a[j]; } }
}""") == []


def test_accumulator_moving_with_the_loop_is_not_a_reduction() -> None:
    # s[j / 2] is not affine, so a dependence is assumed, but the element changes with j.
    assert found("""
kernel g(i32 n, inout f64 s[n], in f64 a[n]) {
  for j in 0..n { s[j / 2] += a[j]; }
}""") == []


# ---------------------------------------------------------------------------
# The mark: text form, checker, shuffled interpreter


MARKED = """kernel g(i32 n, in f64 L[n][n], inout f64 x[n], inout f64 m[1]) {
  for i in 0..n {
    for j in 0..i reduce(+, max) {
      x[i] -= L[i][j] * x[j];
      m[0] = fmax(m[0], L[i][j]);
    }
  }
}
"""


def test_reduce_mark_round_trips() -> None:
    m = text.parse(MARKED)
    assert text.show(m) == MARKED
    assert text.parse(text.show(m)) == m
    (loop,) = _marked(m)
    assert loop.reduce == ("+", "max")
    ircheck.check(m)


def test_reduce_mark_bad_operator_is_a_syntax_error() -> None:
    with pytest.raises(TranspileError, match="reduction operator"):
        text.parse(MARKED.replace("reduce(+, max)", "reduce(+, avg)"))


@pytest.mark.parametrize(("old", "new", "msg"), [
    ("reduce(+, max)", "reduce(+)", "operator"),
    ("reduce(+, max)", "reduce(*, max)", "accumulation with"),
    ("0..i reduce", "0..i + 1 reduce", "not a reduction"),
])
def test_ircheck_rejects_bad_marks(old: str, new: str, msg: str) -> None:
    with pytest.raises(TranspileError, match=msg):
        ircheck.check(text.parse(MARKED.replace(old, new)))


def _bogus() -> ir.Module:
    """``s[0] = s[0] + s[0] * a[j]`` marked reduce(+): the term reads the partial sum."""
    n, j = ir.Var("n", ir.I32), ir.Var("j", ir.I32)
    s0 = ir.Index("s", (ir.Const(0, ir.I32),), ir.F64)
    a = ir.Index("a", (j,), ir.F64)
    body = (ir.Assign(s0, ir.Binary("+", s0, ir.Binary("*", s0, a, ir.F64), ir.F64)),)
    loop = ir.For("j", ir.I32, ir.Const(0, ir.I32), n, 1, body, reduce=("+",))
    params = (ir.Param("n", ir.I32), ir.Param("s", ir.ArrayType(ir.F64, (ir.Const(1, ir.I32),)), "inout"),
              ir.Param("a", ir.ArrayType(ir.F64, (n,)), "in"))
    return ir.Module((), (ir.Kernel("bogus", params, (loop,)),))


def test_shuffled_mode_exposes_a_wrong_reduction_mark() -> None:
    m = _bogus()
    with pytest.raises(TranspileError, match="not a reduction"):
        ircheck.check(m)
    args = {"n": 8, "s": np.ones(1), "a": np.linspace(0.5, 1.5, 8)}
    seq = interp.run(m, "bogus", args)["s"]
    assert seq[0] == pytest.approx(np.prod(1 + args["a"]))  # program order, exactly as written
    assert any(interp.run(m, "bogus", args, shuffle=seed)["s"][0] != seq[0] for seed in range(4))


def test_shuffled_mode_reassociates_a_right_mark() -> None:
    m = text.parse(MARKED)
    rng = np.random.default_rng(1)
    args = {"n": 40, "L": rng.random((40, 40)) * 0.1, "x": rng.random(40), "m": np.zeros(1)}
    seq = interp.run(m, "g", args)
    for seed in range(3):
        got = interp.run(m, "g", args, shuffle=seed)
        assert max_rel_err(got["x"], seq["x"]) <= 1e-12
        assert got["m"][0] == seq["m"][0]  # max is exact in any association


def test_wrong_operator_in_mark_shows_up_shuffled() -> None:
    m = text.parse(MARKED)
    (loop,) = _marked(m)
    k = m.kernels[0]
    wrong = dataclasses.replace(loop, reduce=("*", "max"))
    outer = k.body[0]
    assert isinstance(outer, ir.For)
    k2 = dataclasses.replace(k, body=(dataclasses.replace(outer, body=(wrong,)),))
    m2 = ir.Module((), (k2,))
    rng = np.random.default_rng(2)
    args = {"n": 6, "L": rng.random((6, 6)), "x": rng.random(6), "m": np.zeros(1)}
    assert max_rel_err(interp.run(m2, "g", args, shuffle=0)["x"], interp.run(m2, "g", args)["x"]) > 1e-6


# ---------------------------------------------------------------------------
# The pass


def test_reduce_gpu_marks_exactly_the_profitable_loops() -> None:
    for name in polybench.NAMES:
        lowered = pipeline.lower(_module(name))
        kinds = {cuda_reduce_shape(lp) for lp in ir.walk(lowered) if isinstance(lp, ir.Launch)} - {None}
        assert kinds == AFFECTED.get(name, set()), name


def cuda_reduce_shape(launch: ir.Launch) -> str | None:
    from passes import launch_forms

    return launch_forms.reduction_shape(launch)


def test_durbin_lone_reductions_launch_inside_a_host_loop() -> None:
    (k,) = pipeline.lower(_module("durbin")).kernels
    host = [s for s in k.body if isinstance(s, ir.For)]
    assert len(host) == 1 and any(isinstance(s, ir.Launch) and _marked(s) for s in host[0].body)  # type: ignore[arg-type]


def test_gemm_like_nests_are_left_alone() -> None:
    for name in ("gemm", "2mm", "syrk", "lu", "trmm"):
        assert not _marked(pipeline.lower(_module(name))), name


def test_no_reassociate_keeps_float_sums_sequential() -> None:
    for name in AFFECTED.keys() - EXACT:
        lowered = pipeline.lower(_module(name), reassociate=False)
        assert not _marked(lowered), name
        src = cuda.emit(lowered, source=f"{name}.c")
        assert "__shfl_down_sync" not in src and "_warps[" not in src, name


def test_no_reassociate_still_marks_exact_reductions() -> None:
    (k,) = text.parse("""
kernel g(i32 n, in f64 a[n], inout f64 m[1], in i32 b[n], inout i32 s[1]) {
  for j in 0..n { m[0] = fmax(m[0], a[j]); }
  for j in 0..n { s[0] += b[j]; }
}""").kernels
    assert [lp.reduce for lp in _marked(ir.Module((), (reduce_gpu.run(k, reassociate=False),)))] == [("max",), ("+",)]


def test_pass_is_identity_without_reductions() -> None:
    (k,) = _module("jacobi-2d").kernels
    assert reduce_gpu.run(k) is k


# ---------------------------------------------------------------------------
# The affected PolyBench kernels: semantics, nvcc, the verifier's stages a-c


@pytest.mark.parametrize("name", sorted(AFFECTED))
def test_polybench_reductions_shuffled_match_gcc(name: str) -> None:
    spec = polybench.spec(name)
    lowered = pipeline.lower(_module(name))
    assert _marked(lowered)
    for seed in range(3):
        args = polybench.make_args(name, np.random.default_rng(100 + seed))
        want = polybench.run_c(name, args)
        got = interp.run(lowered, spec.function, args, shuffle=seed)
        for arr in want:
            err = max_rel_err(got[arr], want[arr])
            assert err <= 1e-10, f"{name} (seed {seed}): {arr}: max relative error {err:.3g}"


def _emit(name: str, tmp_path: Path) -> Path:
    out = tmp_path / f"{name}.cu"
    out.write_text(cuda.emit(pipeline.lower(_module(name)), source=f"{name}.c"))
    return out


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not on PATH")
@pytest.mark.parametrize("name", sorted(AFFECTED))
def test_polybench_reductions_compile_with_nvcc(name: str, tmp_path: Path) -> None:
    cu = _emit(name, tmp_path)
    r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", str(tmp_path / "k.cubin"), str(cu)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.sample(3)
@pytest.mark.slow
@needs_gxx
@pytest.mark.parametrize("name", sorted(AFFECTED))
def test_polybench_reductions_pass_verify_abc(name: str, tmp_path: Path) -> None:
    from transpile.verify import Options, simstage, verify_file

    # Full mode's shapes within simstage.SMALL_WORK: n up to 257 for the matrix-vector kernels (three
    # 128-row bands of the folds, several blocks of partials), 65 for the cubic ones.
    report = verify_file(_emit(name, tmp_path), polybench.spec(name).path,
                         options=Options(seed=2024, stages="abc", gpu=False,  # type: ignore[call-arg]
                                         sim_work=simstage.SMALL_WORK))
    assert report.failure is None, report.summary()


def test_cli_no_reassociate(tmp_path: Path) -> None:
    import sys

    src = polybench.spec("durbin").path

    def compile_(*extra: str) -> str:
        out = tmp_path / "out.cu"
        r = subprocess.run([sys.executable, "-m", "transpile.cli", "compile", str(src), "-o", str(out),
                            "--no-verify", *extra], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return out.read_text()

    assert "_warps[" in compile_()
    assert "_warps[" not in compile_("--no-reassociate")


EDGE_CASES = """kernel red(i32 n, in f64 a[n], in i32 b[n], inout f64 s[3], inout i32 t[1], in f64 A[n][n],
           inout f64 r[n]) {
  for j in 0..n step -1 { s[0] += a[j]; }
  for j in 0..n { s[1] = fmax(s[1], a[j]); }
  for j in 1..n { s[2] = fmin(a[j], s[2]); }
  for j in 0..n { t[0] += b[j]; }
  for i in 0..n {
    f64 u = 0.5;
    r[i] = r[i] * u;
    for j in 0..n { r[i] += A[i][j] * a[j]; }
  }
}
"""


def test_edge_cases_are_marked() -> None:
    lowered = pipeline.lower(text.parse(EDGE_CASES))
    assert [lp.reduce for lp in _marked(lowered)] == [("+",), ("max",), ("min",), ("+",), ("+",)]
    src = cuda.emit(lowered, source="red.ir")
    # four one-block trees (each: a warp shuffle, 8 warp partials folded by thread 0) and one row reduction
    assert src.count("__shfl_down_sync") == 5 and src.count("_warps[8];") == 4


@pytest.mark.slow
@needs_gxx
def test_edge_cases_pass_verify_abc(tmp_path: Path) -> None:
    """Downward, min/max, integer, empty and row reductions (Decl on lane 0) in the CPU simulator."""
    from transpile.verify import Options, verify_file

    ref = tmp_path / "red.ir"
    ref.write_text(EDGE_CASES)
    cu = tmp_path / "red.cu"
    cu.write_text(cuda.emit(pipeline.lower(text.parse(EDGE_CASES)), source="red.ir"))
    if HAVE_NVCC:
        r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-o", str(tmp_path / "k.cubin"), str(cu)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    report = verify_file(cu, ref, options=Options(seed=2024, stages="abc", gpu=False))  # type: ignore[call-arg]
    assert report.failure is None, report.summary()


def test_nussinov_cells_reduce_their_k_loop_a_warp_each() -> None:
    """Rule (b) on a wavefront's diagonal: the cell's k loop reads ``table[i][k]`` along a row and
    ``table[k + 1][w + i]`` down a column, and its length grows with the host loop's ``w`` while the
    cells get fewer: a warp a cell (``rows``), the k loop an integer max reduction over the lanes."""
    (k,) = pipeline.lower(_module("nussinov")).kernels
    launches = [n for n in ir.statements(k) if isinstance(n, ir.Launch)]
    assert [lp.form for lp in launches] == [ir.LaunchForm.ROWS]
    assert [lp.reduce for lp in ir.walk(launches[0]) if isinstance(lp, ir.For) and lp.reduce] == [("max",)]

"""Sweep nests: one pass over a matrix for its row and column reductions (reduce-gpu rule (d)).

``passes.reduce_gpu.sweep_shape`` (the shape), ``passes.fuse`` (bicg's and mvt's pieces joined
into one nest), ``ircheck``/``interp`` (the mark on the outer loop), ``transpile.cuda.sweep``
(the ``sweep`` launch and its fold launch) and the cost model's price.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

from passes import fuse, reduce_gpu
from tests import polybench
from transpile import cuda, ir, pipeline
from transpile.cuda import sweep as cuda_sweep
from transpile.diagnostics import TranspileError
from transpile.frontend import c as cfront
from transpile.ir import check as ircheck
from transpile.ir import interp, text
from transpile.search import costmodel

KERNELS = Path(__file__).resolve().parent / "kernels"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the simulator needs g++")

BICG_PARAMS = "i32 m, i32 n, in f64 A[n][m], inout f64 s[m], inout f64 q[n], in f64 p[m], in f64 r[n]"
SWEEP = """
  for i in 0..n {
    for j in 0..m {
      s[j] += r[i] * A[i][j];
      q[i] += A[i][j] * p[j];
    }
  }"""


def _k(body: str, params: str = BICG_PARAMS) -> ir.Kernel:
    return text.parse(f"kernel k({params}) {{{body}\n}}").kernels[0]


def _module(name: str) -> ir.Module:
    spec = polybench.spec(name)
    return cfront.parse_file(str(spec.path), function=spec.function)


def _shapes(m: ir.Module) -> list[str]:
    return [li.shape for li in cuda.launches(m)]


# ---------------------------------------------------------------------------
# Selection


def test_bicg_and_mvt_become_one_sweep_launch() -> None:
    assert _shapes(pipeline.lower(_module("bicg"))) == ["plain", "plain", "sweep"]
    assert _shapes(pipeline.lower(_module("mvt"))) == ["sweep"]
    (k,) = pipeline.lower(_module("mvt")).kernels
    (lp,) = k.body
    assert isinstance(lp, ir.Launch)
    sw = reduce_gpu.sweep_shape(lp.body[0])  # type: ignore[arg-type]
    assert sw is not None and sw.along == ("r", "c")  # x1[i] over j, then x2 (interchanged) over i


def test_gemver_update_and_x_sweep_share_one_pass() -> None:
    # A = A + u1 v1^T + u2 v2^T (a map) and x += beta A^T y (interchanged): one sweep; w's row
    # reduction reads the x that the sweep finishes, so it stays a launch of its own.
    lowered = pipeline.lower(_module("gemver"))
    assert _shapes(lowered) == ["sweep", "plain", "rows"]
    sweep = lowered.kernels[0].body[0].body[0]  # type: ignore[attr-defined]
    assert reduce_gpu.sweep_shape(sweep).along == ("map", "c") and sweep.reduce == ("+",)  # type: ignore[union-attr]


def test_kernels_without_a_one_pass_form_keep_their_shapes() -> None:
    # atax's y reads tmp, which the row reduction writes: two passes are needed.
    assert "sweep" not in _shapes(pipeline.lower(_module("atax")))
    for name in ("gesummv", "correlation", "covariance"):
        assert "sweep" not in _shapes(pipeline.lower(_module(name))), name


def test_reduce_gpu_marks_a_sweep_nest_on_its_outer_loop() -> None:
    marked = reduce_gpu.run(_k(SWEEP))
    (outer,) = marked.body
    assert isinstance(outer, ir.For) and outer.reduce == ("+", "+") and not outer.body[0].reduce  # type: ignore[union-attr]
    ircheck.check(ir.Module((), (marked,)))


@pytest.mark.parametrize("body, why", [
    ("""
  for i in 0..n {
    for j in 0..m {
      s[j] += r[i] * A[i][j];
      q[i] += A[i][j] * s[j];
    }
  }""", "a term reads an array written in the nest"),
    ("""
  for i in 0..n {
    for j in 0..i {
      s[j] += r[i] * A[i][j];
      q[i] += A[i][j] * p[j];
    }
  }""", "triangular bounds"),
    ("""
  for i in 0..n {
    for j in 0..m {
      s[j] = r[i] * A[i][j];
      q[i] += A[i][j] * p[j];
    }
  }""", "a statement is not an accumulation"),
    ("""
  for i in 0..n {
    for j in 0..m {
      q[i] += A[i][j] * p[j];
    }
  }""", "row reductions alone (rule (b))"),
    ("""
  for j in 0..m {
    for i in 0..n {
      s[j] += r[i] * A[i][j];
      q[i] += A[i][j] * p[j];
    }
  }""", "the matrix runs along the outer loop"),
    ("""
  for i in 0..n {
    for j in 0..m {
      B[i][j] = A[i][j] * 2.0;
      q[i] += B[i][j] * p[j];
      s[j] += B[i][0];
    }
  }""", "a mapped matrix read at another point"),
    ("""
  for i in 0..n {
    for j in 0..m {
      B[i][j] = A[i][j] * 2.0;
    }
  }""", "a map alone"),
])
def test_sweep_shape_refusals(body: str, why: str) -> None:
    k = _k(body, BICG_PARAMS + ", inout f64 B[n][m]")
    (outer,) = k.body
    assert isinstance(outer, ir.For)
    assert reduce_gpu.sweep_shape(outer) is None, why
    assert reduce_gpu.run(k).body[0].reduce == (), why  # type: ignore[union-attr]


def test_no_reassociate_changes_nothing() -> None:
    k = _k(SWEEP)
    assert reduce_gpu.run(k, reassociate=False) is k
    for name in ("bicg", "mvt"):
        assert "sweep" not in _shapes(pipeline.lower(_module(name), reassociate=False)), name
    # Integer sums are exact in any order: still marked.
    ik = _k(SWEEP, BICG_PARAMS.replace("f64", "i64"))
    assert reduce_gpu.run(ik, reassociate=False).body[0].reduce == ("+", "+")  # type: ignore[union-attr]


def test_ircheck_rejects_a_sweep_mark_on_another_nest() -> None:
    bad = _k(SWEEP.replace("q[i] += A[i][j] * p[j];", "q[i] += A[i][j] * s[j];"))
    (outer,) = bad.body
    marked = dataclasses.replace(outer, reduce=("+", "+"))  # type: ignore[type-var]
    with pytest.raises(TranspileError, match="sweep"):
        ircheck.check(ir.Module((), (dataclasses.replace(bad, body=(marked,)),)))


def test_fuse_joins_bicg_pieces_past_an_independent_statement() -> None:
    k = _k("""
  for j in 0..m { for i in 0..n { s[j] += r[i] * A[i][j]; } }
  for i in 0..n { q[i] = 0.0; }
  for i in 0..n { for j in 0..m { q[i] += A[i][j] * p[j]; } }""")
    fused = fuse.run(k)
    assert len(fused.body) == 2 and fused.body[0] == k.body[1]  # the s nest moved down past q's init
    sweep = fused.body[1]
    assert isinstance(sweep, ir.For) and sweep.reduce == ("+", "+") and reduce_gpu.sweep_shape(sweep) is not None
    assert fuse.run(k, reassociate=False).body == fuse.run(k, reassociate=False).body  # deterministic
    assert all(not (isinstance(s, ir.For) and s.reduce) for s in fuse.run(k, reassociate=False).body)


def test_fuse_does_not_move_a_nest_past_a_conflicting_statement() -> None:
    k = _k("""
  for j in 0..m { for i in 0..n { s[j] += r[i] * A[i][j]; } }
  for j in 0..m { s[j] = 0.0; }
  for i in 0..n { for j in 0..m { q[i] += A[i][j] * p[j]; } }""")
    assert not any(isinstance(s, ir.For) and s.reduce for s in fuse.run(k).body)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shuffled_interpretation_of_a_sweep_matches_program_order(seed: int) -> None:
    m = ir.Module((), (reduce_gpu.run(_k(SWEEP)),))
    rng = np.random.default_rng(seed)
    n, mm = 7, 9
    args = {"m": mm, "n": n, "A": rng.random((n, mm)), "s": rng.random(mm), "q": rng.random(n),
            "p": rng.random(mm), "r": rng.random(n)}
    want = interp.run(m, "k", args)
    got = interp.run(m, "k", args, shuffle=seed)
    for name in ("s", "q"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-13)


# ---------------------------------------------------------------------------
# Grid, scratch and price


def test_grid_fills_the_device_and_scratch_stays_small() -> None:
    old = cuda_sweep.Shape(4, 8, 1, 16)  # the first shape: 16 blocks of 256 threads per SM
    for n, blocks in ((2000, 512), (12288, 2112)):
        tiles, bands, band = cuda_sweep.grid(n, n, 132, old)
        assert tiles * bands == blocks and tiles * bands >= 132 * 3
        assert (bands - 1) * band < n <= bands * band  # every band holds rows
        assert (tiles * n + bands * n) / (n * n) < 0.03  # one X and one Y statement
    default = cuda_sweep.Shape()
    assert (default.vec, default.warps, default.unroll, default.per_sm) == (4, 16, 2, 8)
    for n, blocks in ((2000, 256), (12288, 1056)):
        tiles, bands, band = cuda_sweep.grid(n, n)
        assert tiles * bands == blocks >= 132 and band >= default.warps * default.unroll
        assert (bands - 1) * band < n <= bands * band
        assert (tiles * n + bands * n) / (n * n) < 0.02
    assert cuda_sweep.grid(1, 1) == (1, 1, 1)
    assert cuda_sweep.grid(100000, 1)[1] <= cuda_sweep.MAX_BANDS
    # The emitted host code asks the device for its SM count; grid() takes it as a parameter.
    tiles, bands, _ = cuda_sweep.grid(12288, 12288, 66, old)
    assert tiles * bands == 96 * 11
    assert "transpile_sm_count() + tiles - 1) / tiles" in cuda.emit(pipeline.lower(_module("bicg")), source="bicg.c")


def test_column_partials_are_fitted_to_shared_memory() -> None:
    """Four f64 column statements at 16 warps x 128 columns would need 64 KiB: the warps halve."""
    assert cuda_sweep.Shape(4, 16, 2, 8).fitted(24) == cuda_sweep.Shape(4, 16, 2, 8)  # 48 KiB: fits
    assert cuda_sweep.Shape(4, 16, 2, 8).fitted(32) == cuda_sweep.Shape(4, 8, 2, 8)
    assert cuda_sweep.Shape(8, 1, 1, 8).fitted(8 * 64) == cuda_sweep.Shape(2, 1, 1, 8)
    params = "i32 m, i32 n, in f64 A[n][m], inout f64 s[m], inout f64 t[m], inout f64 u[m], inout f64 v[m], " \
             "inout f64 q[n], in f64 p[m]"
    body = """
  for i in 0..n {
    for j in 0..m {
      s[j] += A[i][j];
      t[j] += A[i][j] * 2.0;
      u[j] += A[i][j] * 3.0;
      v[j] += A[i][j] * 4.0;
      q[i] += A[i][j] * p[j];
    }
  }"""
    module = text.parse(f"kernel k({params}) {{{body}\n}}")
    lowered = pipeline.lower(module)
    assert _shapes(lowered) == ["sweep"]
    code = cuda.emit(lowered, source="k.ir")
    assert code.count("[1024];") == 4 and "__launch_bounds__(256)" in code and "dim3(32u, 8u, 1u)" in code


def test_cost_model_prices_a_sweep_as_one_pass() -> None:
    lowered = pipeline.lower(_module("mvt"))
    est = costmodel.estimate(lowered.kernels[0], cuda.launches(lowered), {"n": 12288})
    (launch,) = est.launches
    assert launch.shape == "sweep" and launch.bound == "dram"
    a_bytes = 12288 * 12288 * 8
    assert a_bytes <= launch.dram_bytes < 1.05 * a_bytes
    assert est.efficiency > 0.9


# ---------------------------------------------------------------------------
# The emitted CUDA, run by the simulator, against the interpreter


@pytest.fixture(scope="module")
def sims(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    out = tmp_path_factory.mktemp("sweep")
    libs: dict[str, object] = {}
    for name in ("bicg", "mvt"):
        lowered = pipeline.lower(_module(name))
        cu = out / f"{name}.cu"
        cu.write_text(cuda.emit(lowered, source=f"{name}.c"))
        libs[name] = SimLibrary(build(cu, out / name))
    return libs


def _bicg_args(rng: np.random.Generator, m: int, n: int) -> dict[str, object]:
    return {"m": m, "n": n, "A": rng.random((n, m)) + 0.5, "s": rng.random(m), "q": rng.random(n),
            "p": rng.random(m) + 0.5, "r": rng.random(n) + 0.5}


def _check(lib: object, module: ir.Module, fn: str, args: dict[str, object], order: list[str],
           outs: tuple[str, ...], seed: int = 0) -> dict[str, np.ndarray]:
    want = interp.run(module, fn, {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})
    got = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    run = lib.run(fn, *(got[k] for k in order), seed=seed, restype=None)  # type: ignore[attr-defined]
    assert run.ok, run.diagnostics  # (the drop-in keeps its memory pool between calls)
    for name in outs:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=0, err_msg=name)  # type: ignore[arg-type]
    return got  # type: ignore[return-value]


@needs_gxx
@pytest.mark.parametrize("m, n", [(0, 0), (0, 5), (5, 0), (1, 1), (1, 7), (7, 1), (3, 5), (129, 131),
                                  (300, 257), (1000, 70)])
def test_bicg_sweep_matches_the_interpreter(sims: dict[str, object], m: int, n: int) -> None:
    rng = np.random.default_rng(m * 1000 + n)
    _check(sims["bicg"], _module("bicg"), "kernel_bicg", _bicg_args(rng, m, n), ["m", "n", "A", "s", "q", "p", "r"],
           ("s", "q"))


@needs_gxx
@pytest.mark.parametrize("n", [0, 1, 2, 33, 127, 129, 300])
def test_mvt_sweep_matches_the_interpreter(sims: dict[str, object], n: int) -> None:
    rng = np.random.default_rng(n)
    args = {"n": n, "x1": rng.random(n), "x2": rng.random(n), "y_1": rng.random(n), "y_2": rng.random(n),
            "A": rng.random((n, n)) + 0.5}
    _check(sims["mvt"], _module("mvt"), "kernel_mvt", args, ["n", "x1", "x2", "y_1", "y_2", "A"], ("x1", "x2"))


@needs_gxx
@pytest.mark.parametrize("n", [0, 1, 5, 130, 257])
def test_gemver_sweep_matches_the_interpreter(tmp_path: Path, n: int) -> None:
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    module = _module("gemver")
    cu = tmp_path / "gemver.cu"
    cu.write_text(cuda.emit(pipeline.lower(module), source="gemver.c"))
    lib = SimLibrary(build(cu, tmp_path / "out"))
    rng = np.random.default_rng(n)
    order = ["n", "alpha", "beta", "A", "u1", "v1", "u2", "v2", "w", "x", "y", "z"]
    args: dict[str, object] = {k: rng.random(n) for k in order[4:]}
    args.update(n=n, alpha=1.5, beta=1.2, A=rng.random((n, n)))
    _check(lib, module, "kernel_gemver", args, order, ("A", "w", "x"))


@needs_gxx
def test_every_block_partial_is_folded_and_results_are_deterministic(sims: dict[str, object]) -> None:
    # Several tiles and several bands: a dropped (or doubled) partial moves a sum by a whole term
    # of positive values, far beyond the tolerance.
    m, n = 300, 700
    tiles, bands, _ = cuda_sweep.grid(n, m)
    assert tiles >= 3 and bands >= 3
    rng = np.random.default_rng(5)
    args = _bicg_args(rng, m, n)
    order = ["m", "n", "A", "s", "q", "p", "r"]
    a = _check(sims["bicg"], _module("bicg"), "kernel_bicg", args, order, ("s", "q"), seed=1)
    b = _check(sims["bicg"], _module("bicg"), "kernel_bicg", args, order, ("s", "q"), seed=2)
    assert np.array_equal(a["s"], b["s"]) and np.array_equal(a["q"], b["q"])  # another block order, same bits


MIXED = """kernel k(i32 n, i32 m, in f32 A[n][m], in f32 B[n][m], inout f32 s[m], inout f32 q[n],
                 inout f32 t[n], in f32 p[m]) {
  for i in 1..n - 1 {
    for j in 2..m {
      s[j] -= A[i][j] * 0.5f;
      q[i] += A[i][j] * p[j];
      t[i] = fmaxf(t[i], B[i][j] - p[j]);
    }
  }
}"""


@needs_gxx
def test_offset_bounds_float_min_max_and_subtraction(tmp_path: Path) -> None:
    """Lower bounds other than 0, f32, ``-=`` and ``max``: distributed, re-fused, one sweep."""
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    module = text.parse(MIXED)
    lowered = pipeline.lower(module)
    assert [li.shape for li in cuda.launches(lowered)] == ["sweep"]
    (lp,) = lowered.kernels[0].body
    assert sorted(lp.body[0].reduce) == ["+", "+", "max"]  # type: ignore[attr-defined]
    cu = tmp_path / "k.cu"
    cu.write_text(cuda.emit(lowered, source="k.ir"))
    lib = SimLibrary(build(cu, tmp_path / "out"))
    for n, m in ((0, 0), (2, 3), (3, 2), (3, 3), (70, 131), (300, 260)):
        rng = np.random.default_rng(n + m)
        f = np.float32
        args: dict[str, object] = {"n": n, "m": m, "A": rng.random((n, m), dtype=f), "B": rng.random((n, m), dtype=f),
                                   "s": rng.random(m, dtype=f), "q": rng.random(n, dtype=f),
                                   "t": rng.random(n, dtype=f), "p": rng.random(m, dtype=f)}
        want = interp.run(module, "k", {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})
        got = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
        run = lib.run("k", *(got[k] for k in ("n", "m", "A", "B", "s", "q", "t", "p")), restype=None)
        assert run.ok, run.diagnostics
        np.testing.assert_allclose(got["s"], want["s"], rtol=1e-5, err_msg=f"s at {n}x{m}")  # type: ignore[arg-type]
        np.testing.assert_allclose(got["q"], want["q"], rtol=1e-5, err_msg=f"q at {n}x{m}")  # type: ignore[arg-type]
        assert np.array_equal(got["t"], want["t"]), f"t at {n}x{m}"  # max is exact


# ---------------------------------------------------------------------------
# Sweep shapes (``--sweep``, ``tile.Options.sweep``)

SHAPES = [(4, 8, 2, 16), (4, 8, 3, 4), (8, 2, 2, 4), (1, 1, 5, 64)]
"""Unrolled rows (2, and 3 with bands that are not a multiple of it), more columns per lane than
warps (the column fold strides), one lane-column and one warp."""


@pytest.fixture(scope="module")
def shaped(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, int, int, int], object]:
    """bicg built with each of SHAPES and with each one's single-row twin."""
    from passes import tile
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    out = tmp_path_factory.mktemp("shapes")
    lowered = pipeline.lower(_module("bicg"))
    libs: dict[tuple[int, int, int, int], object] = {}
    for shape in {s for v, w, u, b in SHAPES for s in ((v, w, u, b), (v, w, 1, b))}:
        name = "x".join(map(str, shape))
        cu = out / f"bicg_{name}.cu"
        cu.write_text(cuda.emit(lowered, source="bicg.c", tiling=tile.Options(sweep=shape)))
        libs[shape] = SimLibrary(build(cu, out / name))
    return libs


@pytest.mark.sample(2)
@needs_gxx
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("m, n", [(129, 131), (300, 257), (37, 1000), (256, 64)])
def test_sweep_shapes_match_the_interpreter_and_unrolling_keeps_the_bits(
        shaped: dict[tuple[int, int, int, int], object], shape: tuple[int, int, int, int], m: int, n: int) -> None:
    v, w, u, b = shape
    order = ["m", "n", "A", "s", "q", "p", "r"]
    args = _bicg_args(np.random.default_rng(m + 7 * n), m, n)
    got = _check(shaped[shape], _module("bicg"), "kernel_bicg", args, order, ("s", "q"))
    # The rows a warp takes together are added in the same order as one at a time.
    single = _check(shaped[(v, w, 1, b)], _module("bicg"), "kernel_bicg", args, order, ("s", "q"))
    assert np.array_equal(got["s"], single["s"]) and np.array_equal(got["q"], single["q"])


@needs_gxx
def test_gemver_map_under_unrolled_rows(tmp_path: Path) -> None:
    """A map ``A[i][j] = ...`` among the accumulations, three rows at a time, partial tiles."""
    from passes import tile
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    module = _module("gemver")
    cu = tmp_path / "gemver.cu"
    cu.write_text(cuda.emit(pipeline.lower(module), source="gemver.c", tiling=tile.Options(sweep=(2, 4, 3, 8))))
    lib = SimLibrary(build(cu, tmp_path / "out"))
    for n in (1, 70, 203):
        rng = np.random.default_rng(n)
        order = ["n", "alpha", "beta", "A", "u1", "v1", "u2", "v2", "w", "x", "y", "z"]
        args: dict[str, object] = {k: rng.random(n) for k in order[4:]}
        args.update(n=n, alpha=1.5, beta=1.2, A=rng.random((n, n)))
        _check(lib, module, "kernel_gemver", args, order, ("A", "w", "x"))


def test_sweep_shape_options_are_checked_and_reach_the_code() -> None:
    from click.testing import CliRunner

    from passes import tile
    from transpile.cli import main

    assert tile.Options(sweep=(4, 8, 2, 16)).problem() is None
    for bad in ((0, 8, 1, 16), (4, 33, 1, 16), (4, 8, 9, 16), (4, 8, 1, 65), (8, 16, 1, 16)):
        assert "sweep shape" in (tile.Options(sweep=bad).problem() or ""), bad
    code = cuda.emit(pipeline.lower(_module("bicg")), source="bicg.c", tiling=tile.Options(sweep=(8, 4, 2, 6)))
    assert "__launch_bounds__(512)" in cuda.emit(pipeline.lower(_module("bicg")), source="bicg.c")  # 4x16x2x8
    assert "__launch_bounds__(128)" in code and "c_base + 256 <= c_n" in code and "rt += 8)" in code
    assert "6LL * transpile_sm_count()" in code and "dim3(32u, 4u, 1u)" in code
    assert cuda_sweep.grid(12288, 12288, 132, cuda_sweep.Shape(8, 4, 2, 6)) == (48, 17, 723)
    spec = polybench.spec("bicg")
    res = CliRunner().invoke(main, ["compile", str(spec.path), "--sweep", "4x8x0x16", "-o", "-", "--no-verify"])
    assert res.exit_code == 2 and "sweep shape 4x8x0x16" in res.output

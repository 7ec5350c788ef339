"""Chain nests: a row's reductions, then its column terms, in one pass over a matrix (reduce-gpu rule (e)).

``passes.reduce_gpu.chain_shape`` (the shape), ``passes.fuse`` (atax's row nest and its
interchanged column nest joined back into one loop), ``ircheck``/``interp`` (the marks),
``transpile.cuda.chain`` (the ``chain`` launch and its fold launch) and the cost model's price.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from passes import fuse, reduce_gpu, tile
from tests import polybench
from transpile import cuda, ir, pipeline
from transpile.cuda import chain as cuda_chain
from transpile.diagnostics import TranspileError
from transpile.frontend import c as cfront
from transpile.ir import check as ircheck
from transpile.ir import interp, text
from transpile.search import costmodel

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the simulator needs g++")

ATAX_PARAMS = "i32 m, i32 n, in f64 A[m][n], in f64 x[n], inout f64 y[n], inout f64 tmp[m]"
CHAIN = """
  for i in 0..m {
    tmp[i] = 0.0;
    for j in 0..n {
      tmp[i] += A[i][j] * x[j];
    }
    for j in 0..n {
      y[j] += A[i][j] * tmp[i];
    }
  }"""


def _k(body: str, params: str = ATAX_PARAMS) -> ir.Kernel:
    return text.parse(f"kernel k({params}) {{{body}\n}}").kernels[0]


def _module(name: str) -> ir.Module:
    spec = polybench.spec(name)
    return cfront.parse_file(str(spec.path), function=spec.function)


def _shapes(m: ir.Module) -> list[str]:
    return [li.shape for li in cuda.launches(m)]


# ---------------------------------------------------------------------------
# Selection


def test_atax_becomes_one_chain_launch() -> None:
    lowered = pipeline.lower(_module("atax"))
    assert _shapes(lowered) == ["plain", "chain"]
    (k,) = lowered.kernels
    lp = k.body[1]
    assert isinstance(lp, ir.Launch)
    ch = reduce_gpu.chain_shape(lp.body[0])  # type: ignore[arg-type]
    assert ch is not None and ch.outer.reduce == ("+",) and ch.rows.reduce == ("+",) and not ch.cols.reduce
    assert [type(s).__name__ for s in ch.pre] == ["Assign"]


def test_reduce_gpu_marks_a_chain_on_two_loops() -> None:
    (marked,) = reduce_gpu.run(_k(CHAIN)).body
    assert isinstance(marked, ir.For) and marked.reduce == ("+",)
    rows, cols = marked.body[1], marked.body[2]
    assert isinstance(rows, ir.For) and rows.reduce == ("+",)
    assert isinstance(cols, ir.For) and not cols.reduce
    ircheck.check(ir.Module((), (reduce_gpu.run(_k(CHAIN)),)))


@pytest.mark.parametrize("body, params, why", [
    (CHAIN.replace("y[j] += A[i][j] * tmp[i]", "y[j] += A[i][j] * tmp[i - 1]").replace("0..m", "1..m"),
     ATAX_PARAMS, "a column term reads another row's X"),
    (CHAIN.replace("tmp[i] += A[i][j] * x[j]", "tmp[i] += A[i][j] * y[j]"), ATAX_PARAMS, "a row term reads Y"),
    (CHAIN.replace("y[j] += A[i][j] * tmp[i]", "y[j] += x[j] * tmp[i]"), ATAX_PARAMS,
     "the column loop reads no matrix"),
    (CHAIN.replace("y[j] += A[i][j] * tmp[i]", "y[j] += A[j][i] * tmp[i]"), ATAX_PARAMS.replace("A[m][n]", "A[n][n]"),
     "the column loop reads a matrix down a column"),
    (CHAIN.replace("for j in 0..n {\n      y", "for j in 0..i {\n      y"), ATAX_PARAMS,
     "the column loop is triangular"),
    (CHAIN.replace("y[j] += A[i][j] * tmp[i]", "x[j] += A[i][j] * tmp[i]"), ATAX_PARAMS.replace("in f64 x[n]", "inout f64 x[n]"),
     "Y is an array the row terms read"),
])
def test_chain_shape_refusals(body: str, params: str, why: str) -> None:
    k = _k(body, params)
    (loop,) = k.body
    assert reduce_gpu.chain_shape(loop) is None, why  # type: ignore[arg-type]
    marked = reduce_gpu.run(k)
    assert not (isinstance(marked.body[0], ir.For) and marked.body[0].reduce), why


def test_no_reassociate_keeps_two_launches() -> None:
    lowered = pipeline.lower(_module("atax"), reassociate=False)
    assert "chain" not in _shapes(lowered)


def test_ircheck_rejects_a_chain_mark_on_a_nest_that_is_not_one() -> None:
    bad = CHAIN.replace("y[j] += A[i][j] * tmp[i]", "y[j] += A[i][j] * tmp[i - 1]").replace("0..m", "1..m")
    src = f"kernel k({ATAX_PARAMS}) {{{bad}\n}}".replace("for i in 1..m {", "for i in 1..m reduce(+) {")
    with pytest.raises(TranspileError, match="sweep or a chain nest"):
        ircheck.check(text.parse(src))


def test_ircheck_rejects_a_chain_mark_with_the_wrong_operator() -> None:
    src = f"""kernel k({ATAX_PARAMS}) {{
  for i in 0..m reduce(*) {{
    tmp[i] = 0.0;
    for j in 0..n reduce(+) {{
      tmp[i] += A[i][j] * x[j];
    }}
    for j in 0..n {{
      y[j] += A[i][j] * tmp[i];
    }}
  }}
}}"""
    with pytest.raises(TranspileError, match=r"accumulation with '\+' in a loop marked 'reduce\(\*\)'"):
        ircheck.check(text.parse(src))


def test_fuse_joins_atax_past_an_independent_statement_only() -> None:
    params = ATAX_PARAMS + ", inout f64 z[n], in f64 w[n]"
    body = """
  for i in 0..m {
    tmp[i] = 0.0;
    for j in 0..n { tmp[i] += A[i][j] * x[j]; }
  }
  for j in 1..n { z[j] = w[j]; }
  for j in 0..n {
    for i in 0..m { y[j] += A[i][j] * tmp[i]; }
  }"""
    out = fuse.run(_k(body, params))
    assert [type(s).__name__ for s in out.body] == ["For", "For"]
    assert reduce_gpu.chain_shape(out.body[0]) is not None  # type: ignore[arg-type]
    conflict = body.replace("z[j] = w[j];", "z[j] = tmp[j % m];")
    out = fuse.run(_k(conflict, params))
    assert not any(isinstance(s, ir.For) and reduce_gpu.chain_shape(s) for s in out.body)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shuffled_interpretation_of_a_chain_matches_program_order(seed: int) -> None:
    m = ir.Module((), (reduce_gpu.run(_k(CHAIN)),))
    rng = np.random.default_rng(seed)
    mm, n = 7, 9
    args = {"m": mm, "n": n, "A": rng.random((mm, n)), "x": rng.random(n), "y": rng.random(n), "tmp": rng.random(mm)}
    want = interp.run(m, "k", args)
    got = interp.run(m, "k", args, shuffle=seed)
    for name in ("y", "tmp"):
        np.testing.assert_allclose(got[name], want[name], rtol=1e-13)


# ---------------------------------------------------------------------------
# Grid, shared memory and price


def _chain() -> reduce_gpu.Chain:
    ch = reduce_gpu.chain_shape(reduce_gpu.run(_k(CHAIN)).body[0])  # type: ignore[arg-type]
    assert ch is not None
    return ch


def test_grid_fills_the_device_with_the_blocks_that_fit() -> None:
    ch = _chain()
    # 12289 columns: 98 KB of partials a block, two blocks of 512 per SM.
    bands, band, in_smem = cuda_chain.grid(12288, 12289, ch, 512)
    assert in_smem and band == -(-12288 // (2 * 132)) and (bands - 1) * band < 12288 <= bands * band
    assert bands * 12289 / (12288 * 12289) < 0.025  # the scratch against the matrix
    bands, band, in_smem = cuda_chain.grid(2000, 2200, ch, 512)
    assert in_smem and band == cuda_chain.MIN_BAND  # 528 bands would leave bands of 4 rows
    bands, band, _ = cuda_chain.grid(100, 2200, ch, 512)
    assert band >= cuda_chain.MIN_BAND
    assert not cuda_chain.grid(1000, 30000, ch, 512)[2]  # 240 KB of partials: the wide-row form
    assert cuda_chain.grid(1, 1, ch, 512) == (1, 1, True)
    code = cuda.emit(pipeline.lower(_module("atax")), source="atax.c")
    assert "cudaOccupancyMaxActiveBlocksPerMultiprocessor(" in code and "cudaFuncAttributeMaxDynamicSharedMemorySize" in code
    assert "kernel_atax_kernel1_cols<<<" in code  # the wide-row form's column launch


def test_cost_model_prices_a_chain_as_one_pass() -> None:
    lowered = pipeline.lower(_module("atax"))
    est = costmodel.estimate(lowered.kernels[0], cuda.launches(lowered), {"m": 12288, "n": 12289})
    (launch,) = [lc for lc in est.launches if lc.shape == "chain"]
    a_bytes = 12288 * 12289 * 8
    assert a_bytes <= launch.dram_bytes < 1.05 * a_bytes
    assert launch.cache_bytes >= 2 * a_bytes  # the second read of each row comes from the cache
    assert est.efficiency > 0.5
    wide = costmodel.estimate(lowered.kernels[0], cuda.launches(lowered), {"m": 2000, "n": 40000})
    (launch,) = [lc for lc in wide.launches if lc.shape == "chain"]
    assert launch.dram_bytes >= 2 * 2000 * 40000 * 8  # rows too wide: the column launch reads it again


def test_chain_threads_option_is_checked_and_reaches_the_code() -> None:
    assert tile.Options(chain=100).problem() is not None
    assert tile.Options(chain=256).problem() is None
    code = cuda.emit(pipeline.lower(_module("atax")), source="atax.c", tiling=tile.Options(chain=256))
    assert "__launch_bounds__(256) kernel_atax_kernel1(" in code and "dim3(256u, 1u, 1u)" in code


# ---------------------------------------------------------------------------
# The emitted CUDA, run by the simulator, against the interpreter


def _build(code: str, out: Path) -> object:
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    out.mkdir(parents=True, exist_ok=True)
    cu = out / "k.cu"
    cu.write_text(code)
    return SimLibrary(build(cu, out / "sim"))


@pytest.fixture(scope="module")
def atax_sims(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """atax's chain with the partials in shared memory (the default), and the wide-row form (X in the
    chain kernel, the Y terms in the column kernel) forced by a partials limit of 0 bytes."""
    out = tmp_path_factory.mktemp("chain")
    code = cuda.emit(pipeline.lower(_module("atax")), source="atax.c", tiling=tile.Options(chain=128))
    return {"smem": _build(code, out / "smem"),
            "wide": _build("#define TRANSPILE_CHAIN_SMEM_MAX 0\n" + code, out / "wide")}


def _check(lib: object, module: ir.Module, fn: str, args: dict[str, object], order: list[str],
           outs: tuple[str, ...], seed: int = 0, rtol: float = 1e-12) -> dict[str, np.ndarray]:
    want = interp.run(module, fn, {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})
    got = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    run = lib.run(fn, *(got[k] for k in order), seed=seed, restype=None)  # type: ignore[attr-defined]
    assert run.ok, run.diagnostics
    for name in outs:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=0, err_msg=name)  # type: ignore[arg-type]
    return got  # type: ignore[return-value]


def _atax_args(rng: np.random.Generator, m: int, n: int) -> dict[str, object]:
    return {"m": m, "n": n, "A": rng.random((m, n)) + 0.5, "x": rng.random(n) + 0.5, "y": rng.random(n),
            "tmp": rng.random(m)}


@needs_gxx
@pytest.mark.parametrize("where", ["smem", "wide"])
@pytest.mark.parametrize("m, n", [(0, 0), (0, 5), (5, 0), (1, 1), (1, 7), (7, 1), (3, 300), (129, 131),
                                  (300, 257)])
def test_atax_chain_matches_the_interpreter(atax_sims: dict[str, object], where: str, m: int, n: int) -> None:
    rng = np.random.default_rng(m * 1000 + n)
    _check(atax_sims[where], _module("atax"), "kernel_atax", _atax_args(rng, m, n), ["m", "n", "A", "x", "y", "tmp"],
           ("y", "tmp"))


@needs_gxx
def test_every_band_is_folded_and_results_are_deterministic(atax_sims: dict[str, object]) -> None:
    # Many bands of several rows: a dropped (or doubled) partial moves a sum of positive terms by a
    # whole row's term, far beyond the tolerance.
    m, n = 700, 90
    bands, band, _ = cuda_chain.grid(m, n, _chain(), 128)
    assert bands >= 3 and band >= 2
    rng = np.random.default_rng(5)
    args = _atax_args(rng, m, n)
    order = ["m", "n", "A", "x", "y", "tmp"]
    for where in ("smem", "wide"):
        a = _check(atax_sims[where], _module("atax"), "kernel_atax", args, order, ("y", "tmp"), seed=1)
        b = _check(atax_sims[where], _module("atax"), "kernel_atax", args, order, ("y", "tmp"), seed=2)
        assert np.array_equal(a["y"], b["y"]) and np.array_equal(a["tmp"], b["tmp"])  # another block order


MIXED = """kernel k(i32 n, i32 m, in f32 A[n][m], in f32 B[n][m], inout f32 t[n], inout f32 u[n],
                 inout f32 z[n], inout f32 s[m], inout f32 v[m], in f32 p[m]) {
  for i in 1..n - 1 {
    t[i] = 0.0f;
    z[i] = p[i % m] * 2.0f;
    for j in 2..m {
      t[i] += A[i][j] * p[j];
      u[i] = fmaxf(u[i], B[i][j] - p[j]);
    }
    for j in 1..m - 1 {
      s[j] -= A[i][j] * t[i];
      v[j] = fminf(v[j], B[i][j] + u[i] * z[i]);
    }
  }
}"""


@needs_gxx
def test_offset_bounds_float_min_max_and_row_statements(tmp_path: Path) -> None:
    """Lower bounds other than 0, f32, two X and two Y statements (``+``, ``max``, ``-=``, ``min``),
    statements before the row loop that the column terms read."""
    module = text.parse(MIXED)
    lowered = pipeline.lower(module)
    assert "chain" in _shapes(lowered)
    code = cuda.emit(lowered, source="k.ir", tiling=tile.Options(chain=128))
    for where, prefix in (("smem", ""), ("wide", "#define TRANSPILE_CHAIN_SMEM_MAX 0\n")):
        lib = _build(prefix + code, tmp_path / where)
        for n, m in ((0, 0), (2, 3), (3, 2), (3, 3), (70, 131), (300, 260)):
            rng = np.random.default_rng(n + m)
            f = np.float32
            args: dict[str, object] = {"n": n, "m": m, "A": rng.random((n, m), dtype=f),
                                       "B": rng.random((n, m), dtype=f)}
            for a, size in (("t", n), ("u", n), ("z", n), ("s", m), ("v", m), ("p", m)):
                args[a] = rng.random(size, dtype=f)
            order = ["n", "m", "A", "B", "t", "u", "z", "s", "v", "p"]
            want = interp.run(module, "k", {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})
            got = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
            run = lib.run("k", *(got[k] for k in order), restype=None)  # type: ignore[attr-defined]
            assert run.ok, run.diagnostics
            for a in ("t", "s", "z"):
                np.testing.assert_allclose(got[a], want[a], rtol=2e-5, err_msg=f"{a} at {n}x{m} ({where})")
            for a in ("u", "v"):  # max and min of values computed the same way: exact
                np.testing.assert_allclose(got[a], want[a], rtol=1e-6, err_msg=f"{a} at {n}x{m} ({where})")

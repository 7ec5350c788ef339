"""Triangular launches: an innermost parallel loop whose bounds read an outer par variable
(``passes.map_gpu.triangular``) joins the grid; the host sizes it from the corners of the outer
ranges (``transpile.cuda._KernelEmitter._trips``) and the kernel's own bounds idle the rest.

The emitted CUDA runs in the simulator against the interpreter, at sizes off the block grid and
with a trip count largest at either end of the outer range.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from passes import map_gpu, tile
from tests import polybench
from transpile import cuda, ir, pipeline
from transpile.frontend import c as cfront
from transpile.ir import interp, text

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the simulator needs g++")


def _module(src: str) -> ir.Module:
    return text.parse(src, "tri.ir")


def _launch_pars(k: ir.Kernel) -> list[list[str | None]]:
    """Per launch of ``k`` (host loops included), the par marks of its leading loops and the first loop inside."""
    out: list[list[str | None]] = []

    def visit(body: tuple[ir.Stmt, ...]) -> None:
        for s in body:
            if isinstance(s, ir.Launch):
                pars: list[str | None] = []
                inner = s.body
                while len(inner) >= 1 and isinstance(inner[0], ir.For):
                    pars.append(inner[0].par)
                    if inner[0].par is None:
                        break
                    inner = inner[0].body
                out.append(pars)
            elif isinstance(s, ir.For):
                visit(s.body)

    visit(k.body)
    return out


LOWER = """kernel lower(i32 n, inout f64 L[n][n], in f64 d[n]) {
  for i in 0..n {
    for j in 0..i + 1 {
      L[i][j] = L[i][j] * d[j] + 0.5;
    }
  }
}"""

# Largest trip count at the first i (n - i), and a band of constant width whose bounds both read i.
UPPER_BAND = """kernel upper(i32 n, inout f64 U[n][n + 4], inout f64 B[n][n + 4]) {
  for i in 1..n {
    for j in i..n {
      U[i][j] = U[i][j] * 0.5 - (f64)i;
    }
  }
  for i in 0..n {
    for j in i..i + 4 {
      B[i][j] = B[i][j] * 2.0 + (f64)j;
    }
  }
}"""

# j's body holds a loop: it stays each thread's sequential loop (tile's triangular plans).
WITH_LOOP = """kernel rowsum(i32 n, inout f64 S[n][n], in f64 A[n][n]) {
  for i in 0..n {
    for j in 0..i + 1 {
      for k in 0..n {
        S[i][j] += A[i][k] * A[j][k];
      }
    }
  }
}"""

# j's bounds are not affine in i.
SQUARE = """kernel square(i32 n, inout f64 S[n][n]) {
  for i in 0..n {
    for j in 0..i * i % n {
      S[i][j] = S[i][j] + 1.0;
    }
  }
}"""


def test_a_triangle_and_a_band_join_the_grid() -> None:
    (k,) = pipeline.lower(_module(LOWER)).kernels
    assert _launch_pars(k) == [["y", "x"]]
    (k,) = pipeline.lower(_module(UPPER_BAND)).kernels
    assert _launch_pars(k) == [["y", "x"], ["y", "x"]]


def test_a_body_with_a_loop_or_non_affine_bounds_stays_sequential() -> None:
    (k,) = pipeline.lower(_module(WITH_LOOP)).kernels
    assert all(p[-1] is None for p in _launch_pars(k))
    k = map_gpu.run(_module(SQUARE).kernels[0])
    assert _launch_pars(k) == [["x", None]]


def test_host_sizes_the_grid_from_both_ends_of_the_outer_range() -> None:
    code = cuda.emit(pipeline.lower(_module(UPPER_BAND)), source="upper.ir")
    # j in i..n over i in 1..n: n - 1 at i = 1, 1 at i = n - 1; the band: 4 at both ends.
    assert "const long long j_n1 = (long long)n - 1;" in code
    assert "const long long j_n2 = (long long)n - (n - 1);" in code
    assert "const long long j_n = j_n1 > j_n2 ? j_n1 : j_n2;" in code
    assert "if (i_n > 0 && j_n > 0) {" in code
    assert "const long long j_n4 = 0 + 4;" in code
    assert "const long long j_n5 = (long long)(n - 1 + 4) - (n - 1);" in code


def test_row_coarsening_is_off_for_dependent_bounds() -> None:
    launch = next(s for s in pipeline.lower(_module(LOWER)).kernels[0].body if isinstance(s, ir.Launch))
    chain = [launch.body[0], launch.body[0].body[0]]
    assert tile.launch_rows(tile.Options(rows=4), chain) == 1
    assert tile.launch_rows(tile.Options(), chain) == 1


def _build(code: str, out: Path) -> object:
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    out.mkdir(parents=True, exist_ok=True)
    cu = out / "k.cu"
    cu.write_text(code)
    return SimLibrary(build(cu, out / "sim"))


def _check(lib: object, module: ir.Module, fn: str, args: dict[str, object], order: list[str],
           outs: tuple[str, ...], rtol: float = 1e-12) -> None:
    want = interp.run(module, fn, {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()})
    got = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    run = lib.run(fn, *(got[k] for k in order), seed=1, restype=None)  # type: ignore[attr-defined]
    assert run.ok, run.diagnostics
    for name in outs:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=0, err_msg=name)  # type: ignore[arg-type]


@needs_gxx
@pytest.mark.parametrize("rows", [None, 4])
def test_triangles_and_bands_match_the_interpreter(tmp_path: Path, rows: int | None) -> None:
    opts = tile.Options(rows=rows) if rows else None
    for name, src in (("lower", LOWER), ("upper", UPPER_BAND)):
        module = _module(src)
        lib = _build(cuda.emit(pipeline.lower(module), source=f"{name}.ir", tiling=opts), tmp_path / name)
        for n in (0, 1, 2, 5, 33, 70):
            rng = np.random.default_rng(n)
            if name == "lower":
                args: dict[str, object] = {"n": n, "L": rng.random((n, n)), "d": rng.random(n)}
                _check(lib, module, "lower", args, ["n", "L", "d"], ("L",))
            else:
                args = {"n": n, "U": rng.random((n, n + 4)), "B": rng.random((n, n + 4))}
                _check(lib, module, "upper", args, ["n", "U", "B"], ("U", "B"))


@needs_gxx
def test_cholesky_trailing_update_matches_the_interpreter(tmp_path: Path) -> None:
    spec = polybench.spec("cholesky")
    module = cfront.parse_file(str(spec.path), function=spec.function)
    lowered = pipeline.lower(module)
    assert ["y", "x"] in _launch_pars(lowered.kernels[0])
    lib = _build(cuda.emit(lowered, source="cholesky.c"), tmp_path)
    for n in (0, 1, 2, 5, 40):
        args = polybench.make_args("cholesky", np.random.default_rng(n), {"n": n})
        _check(lib, module, spec.function, args, ["n", "A"], ("A",), rtol=1e-9)

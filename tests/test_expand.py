"""Array expansion (passes/expand.py): a scratch array filled afresh by every iteration gets a copy per
iteration; refused where a value crosses iterations, a write is partial, or the loops stay sequential."""

from __future__ import annotations

import numpy as np
import pytest

from passes import REGISTRY, deps, expand
from tests.interp_check import assert_same_results
from tests.polybench import SPECS
from transpile import frontend, ir, pipeline
from transpile.ir import check as ircheck
from transpile.ir import text

HEAD = "kernel k(i32 nr, i32 n, inout f64 a[nr][n], in f64 c[n][n], inout f64 w[n], inout f64 out[1]) {\n"


def _kernel(body: str) -> ir.Module:
    return text.parse(HEAD + body + "}\n")


def _run(m: ir.Module) -> ir.Module:
    out = ir.Module(m.funcs, tuple(expand.run(k) for k in m.kernels))
    ircheck.check(out)
    return out


def _same(m: ir.Module, got_m: ir.Module, nr: int = 5, n: int = 6, shuffles: tuple[int | None, ...] = (None,),
          exact: bool = True) -> None:
    rng = np.random.default_rng(nr * 10 + n)
    args = {"nr": nr, "n": n, "a": rng.random((nr, n)), "c": rng.random((n, n)), "w": rng.random(n),
            "out": rng.random(1)}
    assert_same_results(m, got_m, "k", args, ("a", "w", "out"), shuffles, exact)


DOITGEN_LIKE = """  for r in 0..nr {
    for p in 0..n {
      w[p] = 0.0;
      for s in 0..n {
        w[p] += a[r][s] * c[s][p];
      }
    }
    for p in 0..n {
      a[r][p] = w[p];
    }
  }
"""


def _allocs(m: ir.Module) -> list[str]:
    return [s.name for s in m.kernels[0].body if isinstance(s, ir.Alloc)]


def test_registered() -> None:
    assert REGISTRY["expand"] is expand


@pytest.mark.parametrize("nr", [0, 1, 5])
def test_scratch_vector_gets_a_copy_per_iteration(nr: int) -> None:
    m = _kernel(DOITGEN_LIKE)
    out = _run(m)
    assert _allocs(out) == ["w_x"]
    k = out.kernels[0]
    (nest,) = [s for s in k.body if isinstance(s, ir.For)]
    assert deps.loop_ids(k)[id(nest)] in deps.parallel_loops(k)
    # The caller's w ends as the last iteration left it; with nr = 0 it is untouched.
    _same(m, out, nr=nr)
    _same(m, pipeline.lower(m), nr=nr, shuffles=(0, 1, 2))


@pytest.mark.parametrize("body", [
    # w[p] is read before this iteration writes it: the previous iteration's value flows in.
    DOITGEN_LIKE.replace("w[p] = 0.0;", "w[p] = w[p] * 0.5;"),
    # Only part of w is written: the rest keeps earlier iterations' (or the caller's) values.
    DOITGEN_LIKE.replace("for p in 0..n {\n      w[p] = 0.0;", "for p in 1..n {\n      w[p] = 0.0;"),
    # An accumulation across r keeps r sequential whatever happens to w.
    DOITGEN_LIKE.replace("a[r][p] = w[p];", "a[r][p] = w[p];\n      out[0] += w[p];"),
    # w is indexed by r: no reuse across iterations to remove.
    "  for r in 0..nr {\n    w[r % n] = a[r][0];\n  }\n",
])
def test_refuses_what_would_change_the_meaning_or_free_nothing(body: str) -> None:
    m = _kernel(body)
    assert expand.run(m.kernels[0]) is m.kernels[0]


def test_polybench_doitgen_runs_in_parallel_launches() -> None:
    lowered = pipeline.lower(frontend.load(SPECS["doitgen"].path))
    k = lowered.kernels[0]
    assert not [s for s in k.body if isinstance(s, ir.For)], "no host loops left"
    launches = [s for s in k.body if isinstance(s, ir.Launch)]
    pars = [[f.par for f in ir.walk(lp) if isinstance(f, ir.For) and f.par] for lp in launches]
    assert pars[:2] == [["z", "y", "x"], ["z", "y", "x"]]


STMTS = ("w[p] = a[r][p] * 2.0;", "w[p] = w[p] + c[p][0];", "a[r][p] = w[p] + a[r][p];",
         "w[p] = c[p][p];", "out[0] = out[0] + w[p];", "a[r][p] = w[n - 1 - p];")


@pytest.mark.parametrize("seed", range(30))
def test_random_scratch_uses_keep_their_meaning(seed: int) -> None:
    """Expanded alone, and the whole pipeline run with shuffled parallel loops: equal to the original."""
    rng = np.random.default_rng(seed)
    first = "\n".join(rng.choice(STMTS[:4], size=1))  # a full write of w, or a read of it first
    rest = "\n".join(rng.choice(STMTS, size=int(rng.integers(1, 3))))
    body = f"  for r in 0..nr {{\n    for p in 0..n {{\n      {first}\n    }}\n    for p in 0..n {{\n      {rest}\n    }}\n  }}\n"
    m = _kernel(body)
    _same(m, _run(m))
    _same(m, pipeline.lower(m), shuffles=(0, 1, 2), exact=False)  # reduce-gpu may reassociate


LOCAL = """  f64 t[n];
  for r in 0..nr {
    for p in 0..n {
      t[p] = a[r][p] * 2.0;
    }
    for p in 0..n {
      a[r][p] = t[n - 1 - p] + t[p];
    }
  }
"""


@pytest.mark.parametrize("nr", [0, 1, 5])
def test_local_scratch_array_gets_a_copy_per_iteration_and_goes(nr: int) -> None:
    # A local array (what the C front end makes of one declared in the loop) used by this nest
    # alone: expanded like a parameter, and the original, never read after the nest, dropped.
    m = _kernel(LOCAL)
    out = _run(m)
    assert _allocs(out) == ["t_x"]
    k = out.kernels[0]
    (nest,) = [s for s in k.body if isinstance(s, ir.For)]
    assert deps.loop_ids(k)[id(nest)] in deps.parallel_loops(k)
    assert not any(isinstance(s, ir.If) for s in k.body)  # no copy back
    _same(m, out, nr=nr)
    _same(m, pipeline.lower(m), nr=nr, shuffles=(0, 1, 2))


def test_local_scratch_array_read_after_the_nest_keeps_its_last_value() -> None:
    m = _kernel(LOCAL + "  w[0] = t[n - 1];\n")
    out = _run(m)
    assert _allocs(out) == ["t_x", "t"]
    assert any(isinstance(s, ir.If) for s in out.kernels[0].body)  # the copy back
    for nr in (1, 4):
        _same(m, out, nr=nr)
        _same(m, pipeline.lower(m), nr=nr, shuffles=(0, 1, 2))


#: doitgen over fixed extents, as the real PolyBench file declares it (``double sum[NP]``, loops to
#: ``np <= NP``): each iteration writes ``w[0..n)``, not all of ``w[8]``.
FIXED = "kernel k(i32 nr, i32 n, inout f64 a[nr][8], in f64 c[8][8], inout f64 w[8], inout f64 out[1]) {\n"


def _same_fixed(m: ir.Module, got_m: ir.Module, nr: int, n: int, shuffles: tuple[int | None, ...]) -> None:
    rng = np.random.default_rng(nr * 10 + n)
    args = {"nr": nr, "n": n, "a": rng.random((nr, 8)), "c": rng.random((8, 8)), "w": rng.random(8),
            "out": rng.random(1)}
    assert_same_results(m, got_m, "k", args, ("a", "w", "out"), shuffles)


@pytest.mark.parametrize(("nr", "n"), [(0, 3), (1, 8), (5, 3), (5, 8)])
def test_fixed_extent_scratch_gets_a_copy_per_iteration(nr: int, n: int) -> None:
    """The copy back covers what every iteration writes (``w[0..n)``); ``w[n..8)`` keeps the caller's values."""
    m = text.parse(FIXED + DOITGEN_LIKE + "}\n")
    out = _run(m)
    assert _allocs(out) == ["w_x"]
    k = out.kernels[0]
    (nest,) = [s for s in k.body if isinstance(s, ir.For)]
    assert deps.loop_ids(k)[id(nest)] in deps.parallel_loops(k)
    _same_fixed(m, out, nr, n, (None,))
    _same_fixed(m, pipeline.lower(m), nr, n, (0, 1, 2))


@pytest.mark.parametrize("body", [
    # What an iteration writes depends on r: the last iteration's part is not every iteration's.
    DOITGEN_LIKE.replace("for p in 0..n {\n      w[p] = 0.0;", "for p in 0..r {\n      w[p] = 0.0;"),
    # w[0] is read but written only from p = 1: the previous iteration's value flows in.
    DOITGEN_LIKE.replace("for p in 0..n {\n      w[p] = 0.0;", "for p in 1..n {\n      w[p] = 0.0;"),
    # A conditional write proves nothing.
    DOITGEN_LIKE.replace("w[p] = 0.0;", "if (n > 2) {\n        w[p] = 0.0;\n      }"),
])
def test_fixed_extent_refusals(body: str) -> None:
    m = text.parse(FIXED + body + "}\n")
    assert expand.run(m.kernels[0]) is m.kernels[0]

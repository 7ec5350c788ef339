"""Scalar privatisation (passes/privatize.py): moves that keep the meaning, refusals that would change it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from passes import REGISTRY, privatize
from transpile import ir, pipeline
from transpile.ir import check as ircheck
from transpile.ir import interp, text

HEAD = "kernel k(i32 n, in f64 a[n][n], inout f64 c[n][n], inout f64 out[1]) {\n"


def _kernel(body: str) -> ir.Module:
    return text.parse(HEAD + body + "}\n")


def _decls(m: ir.Module) -> list[tuple[str, int]]:
    """(name, depth of the loops around it) of every Decl."""
    found: list[tuple[str, int]] = []

    def walk(body: tuple[ir.Stmt, ...], depth: int) -> None:
        for s in body:
            if isinstance(s, ir.Decl):
                found.append((s.name, depth))
            elif isinstance(s, ir.For):
                walk(s.body, depth + 1)
            elif isinstance(s, ir.If):
                walk(s.then, depth)
                walk(s.orelse, depth)

    walk(m.kernels[0].body, 0)
    return found


def _run(m: ir.Module) -> ir.Module:
    out = ir.Module(m.funcs, tuple(privatize.run(k) for k in m.kernels))
    ircheck.check(out)
    return out


def _same(m: ir.Module, n: int = 7) -> None:
    rng = np.random.default_rng(0)
    args = {"n": n, "a": rng.random((n, n)), "c": rng.random((n, n)), "out": np.zeros(1)}
    want = interp.run(m, "k", {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()})
    got = interp.run(_run(m), "k", args)
    for name in ("c", "out"):
        assert np.array_equal(want[name], got[name]), name


#: t accumulates across iterations (t = t + ... reads the old value), then is read after the loop.
ACCUMULATE = """  f64 t;
  t = 0.0;
  for i in 0..n {
    t = t + a[i][0];
  }
  out[0] = t;
"""


SYMM_LIKE = """  f64 t;
  for i in 0..n {
    for j in 0..n {
      t = 0.0;
      for k in 0..i {
        t += a[k][j] * a[i][k];
      }
      c[i][j] = c[i][j] + t;
    }
  }
"""


def test_registered() -> None:
    assert REGISTRY["privatize"] is privatize


def test_moves_into_innermost_defining_loop() -> None:
    m = _kernel(SYMM_LIKE)
    assert _decls(_run(m)) == [("t", 2)]
    _same(m)


def test_moves_only_when_a_loop_becomes_parallel() -> None:
    from tests import polybench
    from transpile.frontend import c as cfront
    for name in polybench.NAMES:
        spec = polybench.spec(name)
        (k,) = cfront.parse_file(str(spec.path), function=spec.function).kernels
        assert (privatize.run(k) is not k) == (name in ("symm", "deriche")), name


def test_makes_symm_parallel() -> None:
    from tests import polybench
    from transpile.frontend import c as cfront
    spec = polybench.spec("symm")
    lowered = pipeline.lower(cfront.parse_file(str(spec.path), function=spec.function))
    pars = [f.par for f in ir.walk(lowered) if isinstance(f, ir.For) and f.par]
    assert "y" in pars  # the (i, j) nest that computed temp2 is a 2-D launch now


@pytest.mark.parametrize("body", [
    # read before the write in the same iteration: the previous iteration's value flows in
    """  f64 t;
  t = 0.0;
  for i in 0..n {
    c[i][0] = t;
    t = a[i][0];
  }
""",
    # accumulates across iterations: t = t + ... reads the old value
    ACCUMULATE,
    # read after the loop: the last iteration's value is live
    """  f64 t;
  for i in 0..n {
    t = a[i][0];
    c[i][0] = t;
  }
  out[0] = t;
""",
    # first write is conditional: some iterations read the previous value
    """  f64 t;
  for i in 0..n {
    if (a[i][0] > 0.5) {
      t = a[i][1];
    }
    c[i][0] = t;
  }
""",
])
def test_refuses_when_a_value_crosses_iterations(body: str) -> None:
    m = _kernel(body)
    assert _run(m) == m


def test_a_scalar_read_only_by_a_loop_bound_stays_where_it_is() -> None:
    # The loop's bound needs the value from before the loop (the mutation fuzzer's covariance
    # with `j < k`: an IndexError in _into, which looked for a use in the body).
    m = _kernel("""  i32 t = 2;
  for i in 0..t {
    c[i][0] = a[i][0];
  }
  for i in 0..n {
    t = i + 1;
    c[i][1] = f64(t);
  }
""")
    out = _run(m)
    assert ("t", 0) in _decls(out)
    _same(m)


STMTS = ("t = a[i][j];", "t = t + a[i][j];", "c[i][j] = t;", "c[i][j] = c[i][j] + t;",
         "if (a[i][j] > 0.5) {\n t = a[j][i];\n }", "c[j][i] = c[j][i] * 0.5 + t;")


def _random_kernel(rng: np.random.Generator) -> str:
    inner = "\n".join(rng.choice(STMTS, size=int(rng.integers(1, 5))))
    outer = "\n".join(rng.choice(STMTS[:1] + STMTS[2:3], size=int(rng.integers(0, 2)))).replace("[j]", "[0]")
    after = "out[0] = t;" if rng.random() < 0.3 else ""
    init = "t = 0.0;" if rng.random() < 0.5 else ""
    return (f"  f64 t;\n  {init}\n  for i in 0..n {{\n {outer}\n for j in 0..n {{\n {inner}\n }}\n }}\n"
            f"  {after}\n")


@pytest.mark.parametrize("seed", range(40))
def test_random_scalar_nests_lower_to_the_same_results(seed: int) -> None:
    """Privatised alone, and the whole pipeline after it run shuffled: equal to the sequential original."""
    _check_random(np.random.default_rng(seed), 6, _random_kernel)


def _check_random(rng: np.random.Generator, n: int, draw: Callable[[np.random.Generator], str]) -> None:
    """A program drawn by ``draw``, privatised alone and lowered and run shuffled, against the original."""
    args = {"n": n, "a": rng.random((n, n)), "c": rng.random((n, n)), "out": np.zeros(1)}

    def fresh() -> dict:
        return {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}

    while True:  # draw until the program is defined on these inputs (C leaves reading an unset local undefined)
        m = _kernel(draw(rng))
        try:
            want = interp.run(m, "k", fresh())
        except interp.InterpError as e:
            assert "uninitialised" in str(e)
            continue
        break
    lowered = pipeline.lower(m)
    for mod, shuffles in ((_run(m), [None]), (lowered, [0, 1, 2])):
        for shuffle in shuffles:
            got = interp.run(mod, "k", fresh(), shuffle=shuffle)
            for name in ("c", "out"):
                assert np.allclose(want[name], got[name], rtol=1e-12, atol=0), (name, text.show(mod))


# ---------------------------------------------------------------------------
# Live ranges: a scalar reused by several nests gets a variable per nest where their values are separate


def test_deriche_row_and_column_passes_become_parallel() -> None:
    from tests import polybench
    from transpile.frontend import c as cfront
    spec = polybench.spec("deriche")
    (k,) = cfront.parse_file(str(spec.path), function=spec.function).kernels
    out = privatize.run(k)
    ircheck.check(ir.Module((), (out,)))
    top = [s for s in out.body if isinstance(s, ir.For)]
    # rows causal, rows anti-causal, the sum, columns causal, columns anti-causal, the sum
    assert [_loop_decls(s) for s in top] == [["ym1", "ym2", "xm1"], ["yp1", "yp2", "xp1", "xp2"], [],
                                             ["tm1", "ym1_1", "ym2_1"], ["tp1", "tp2", "yp1_1", "yp2_1"], []]
    from passes import deps
    assert deps.parallel_count(out) == deps.parallel_count(k) + 4  # i, i, j, j of the four passes
    lowered = pipeline.lower(cfront.parse_file(str(spec.path), function=spec.function))
    launches = [s for s in lowered.kernels[0].body if isinstance(s, ir.Launch)]
    assert all(isinstance(lp.body[0], ir.For) and lp.body[0].par for lp in launches)


def _loop_decls(loop: ir.For) -> list[str]:
    return [s.name for s in loop.body if isinstance(s, ir.Decl)]


TWO_NESTS = """  f64 t;
  for i in 0..n {
    t = a[i][0];
    c[i][0] = t;
  }
  for i in 0..n {
    t = a[i][1] * 2.0;
    c[i][1] = t;
  }
"""


def test_each_nest_gets_its_own_variable() -> None:
    m = _kernel(TWO_NESTS)
    assert _decls(_run(m)) == [("t", 1), ("t_1", 1)]
    _same(m)


@pytest.mark.parametrize("body", [
    # the second nest reads the value the first one left: one live range
    """  f64 t;
  for i in 0..n {
    t = a[i][0];
    c[i][0] = t;
  }
  for i in 0..n {
    c[i][1] = t;
    t = a[i][1];
  }
""",
    # the value after the second nest is read: it cannot be private to it
    TWO_NESTS + "  out[0] = t;\n",
])
def test_live_ranges_that_meet_are_not_split(body: str) -> None:
    m = _kernel(body)
    got = _run(m)
    assert [n for n, _ in _decls(got)].count("t") == 1 and not any(n.startswith("t_") for n, _ in _decls(got))
    _same(m)


def test_a_fresh_last_nest_is_split_from_an_accumulation() -> None:
    m = _kernel(ACCUMULATE + """  for i in 0..n {
    t = a[i][1];
    c[i][1] = t;
  }
""")
    got = _run(m)
    assert ("t", 0) in _decls(got) and ("t_3", 1) in _decls(got)
    _same(m)


def test_scalars_that_free_a_loop_only_together_move_together() -> None:
    """Neither t nor u alone frees the loop; both do; v frees nothing and stays where it is."""
    m = _kernel("""  f64 t;
  f64 u;
  f64 v;
  v = 1.0;
  for i in 0..n {
    t = a[i][0];
    u = a[i][1];
    c[i][0] = t + u;
  }
  for i in 0..n {
    v = v + a[i][2];
  }
  out[0] = v;
""")
    got = _run(m)
    assert sorted(_decls(got)) == [("t", 1), ("u", 1), ("v", 0)]
    _same(m)


SEQ_STMTS = ("t = a[i][j];", "t = t + a[i][j];", "c[i][j] = t + u;", "c[i][j] = c[i][j] + t;",
             "u = a[j][i];", "u = u * 0.5 + t;", "if (a[i][j] > 0.5) {\n t = a[j][i];\n }", "c[j][i] = u;")


def _random_sequence(rng: np.random.Generator) -> str:
    """Two scalars over one to three nests, each starting with writes or not, with reads between."""
    nests = []
    for _ in range(int(rng.integers(1, 4))):
        inner = "\n".join(rng.choice(SEQ_STMTS, size=int(rng.integers(1, 4))))
        heads = [h for h in ("t = a[i][0];", "u = a[0][i];") if rng.random() < 0.6]
        nests.append(f"  for i in 0..n {{\n {' '.join(heads)}\n for j in 0..n {{\n {inner}\n }}\n }}\n")
        if rng.random() < 0.3:
            nests.append(f"  out[0] = {rng.choice(['t', 'u'])};\n")
    init = "  t = 0.0;\n  u = 0.0;\n" if rng.random() < 0.7 else ""
    return "  f64 t;\n  f64 u;\n" + init + "".join(nests)


@pytest.mark.parametrize("seed", range(40))
def test_random_scalar_sequences_lower_to_the_same_results(seed: int) -> None:
    """Several nests sharing two scalars: privatised alone, and lowered and run shuffled, as the original."""
    _check_random(np.random.default_rng(1000 + seed), 5, _random_sequence)


def test_random_sequences_are_sometimes_split() -> None:
    rng = np.random.default_rng(7)
    split = 0
    for _ in range(200):
        m = _kernel(_random_sequence(rng))
        split += any(n.startswith(("t_", "u_")) for n, _ in _decls(_run(m)))
    assert split >= 5

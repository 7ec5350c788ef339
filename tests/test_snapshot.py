"""Entry snapshots (passes/snapshot.py): taken where every instance of a read sees entry values and a loop
becomes parallel; refused where a read sees an earlier write or nothing becomes parallel."""

from __future__ import annotations

import numpy as np
import pytest

from passes import REGISTRY, deps, snapshot
from tests.interp_check import assert_same_results
from tests.polybench import SPECS
from transpile import frontend, ir, pipeline
from transpile.ir import check as ircheck
from transpile.ir import text

HEAD = "kernel k(i32 n, in f64 a[n][n], inout f64 b[n][n], inout f64 v[n]) {\n"


def _kernel(body: str, head: str = HEAD) -> ir.Module:
    return text.parse(head + body + "}\n")


def _run(m: ir.Module) -> ir.Module:
    out = ir.Module(m.funcs, tuple(snapshot.run(k) for k in m.kernels))
    ircheck.check(out)
    return out


def _allocs(m: ir.Module) -> list[str]:
    return [s.name for s in m.kernels[0].body if isinstance(s, ir.Alloc)]


def _same(m: ir.Module, got_m: ir.Module, n: int = 7, shuffles: tuple[int | None, ...] = (None,),
          exact: bool = True) -> None:
    """``got_m`` computes what ``m`` computes (bit for bit; ``exact=False``: up to reassociated reductions)."""
    rng = np.random.default_rng(n)
    args = {"n": n, "a": rng.random((n, n)), "b": rng.random((n, n)), "v": rng.random(n)}
    assert_same_results(m, got_m, "k", args, ("b", "v"), shuffles, exact)


TRMM_LIKE = """  for i in 0..n {
    for j in 0..n {
      for k in i + 1..n {
        b[i][j] += a[k][i] * b[k][j];
      }
      b[i][j] = 2.0 * b[i][j];
    }
  }
"""


def test_registered() -> None:
    assert REGISTRY["snapshot"] is snapshot


def test_trmm_like_update_reads_a_snapshot_and_its_rows_become_parallel() -> None:
    m = _kernel(TRMM_LIKE)
    k = m.kernels[0]
    reads = deps.entry_reads(k)
    assert [r.indices for r in reads["b"]] == [(ir.Var("k", ir.I32), ir.Var("j", ir.I32))]  # not b[i][j]
    out = _run(m)
    assert _allocs(out) == ["b_entry"]
    assert len(deps.parallel_loops(out.kernels[0])) > len(deps.parallel_loops(k))
    shown = text.show(out)
    assert "b[i][j] += a[k][i] * b_entry[k][j];" in shown and "b[i][j] = 2.0 * b[i][j];" in shown
    _same(m, out)
    # The whole pipeline, with the parallel loops run in shuffled orders, computes the same values.
    _same(m, pipeline.lower(m), shuffles=(0, 1, 2))


@pytest.mark.parametrize("body", [
    # v[i - 1] sees the previous iteration's write: a true dependence stays.
    "  for i in 1..n {\n    v[i] = v[i - 1] + v[i];\n  }\n",
    # v[i + 1] alone would be an entry read, but v[i - 1] still carries a flow: nothing frees i.
    "  for i in 1..n - 1 {\n    v[i] = v[i + 1] + v[i - 1];\n  }\n",
    # Already parallel: a snapshot would cost a copy for nothing.
    "  for i in 0..n {\n    for j in 0..n {\n      b[i][j] = b[i][j] * a[i][j];\n    }\n  }\n",
    # A read of the row written by the same iteration's first statement: not an entry read.
    "  for i in 0..n - 1 {\n    v[i + 1] = a[i][0];\n    v[i] = v[i + 1] * 2.0;\n  }\n",
])
def test_refuses_what_would_change_the_meaning_or_free_nothing(body: str) -> None:
    m = _kernel(body)
    assert snapshot.run(m.kernels[0]) is m.kernels[0]


def test_shifted_in_place_update_becomes_parallel() -> None:
    # Every v[i + 1] is read before iteration i + 1 overwrites it: only anti dependences.
    m = _kernel("  for i in 0..n - 1 {\n    v[i] = v[i + 1] * 0.5 + a[i][i];\n  }\n")
    out = _run(m)
    assert _allocs(out) == ["v_entry"]
    (loop,) = [s for s in out.kernels[0].body if isinstance(s, ir.For) and s.var == "i"]
    assert deps.loop_ids(out.kernels[0])[id(loop)] in deps.parallel_loops(out.kernels[0])
    _same(m, out)
    _same(m, pipeline.lower(m), shuffles=(0, 1, 2))


def test_snapshot_name_avoids_existing_names() -> None:
    head = "kernel k(i32 n, in f64 a[n][n], inout f64 b[n][n], inout f64 v[n], inout f64 b_entry[n]) {\n"
    m = _kernel(TRMM_LIKE.replace("2.0 * b[i][j]", "2.0 * b[i][j] + b_entry[j]"), head)
    out = _run(m)
    assert _allocs(out) == ["b_entry1"]


def test_polybench_trmm_is_mapped_as_a_parallel_nest() -> None:
    spec = SPECS["trmm"]
    lowered = pipeline.lower(frontend.load(spec.path))
    launches = [n for n in ir.walk(lowered.kernels[0]) if isinstance(n, ir.Launch)]
    pars = [[f.par for f in ir.walk(lp) if isinstance(f, ir.For) and f.par] for lp in launches]
    assert pars == [["y", "x"], ["y", "x"]]  # the copy, then the update over rows and columns


DRIFT = ("v[i] = v[i + 1] * 0.5;", "v[i] = v[i] + a[i][i];", "b[i][j] = b[j][i] + 1.0;",
         "b[i][j] += a[i][j] * b[n - 1 - i][j];", "v[i] = b[i][j] - v[i];", "b[i][j] = v[j] * 2.0;")


@pytest.mark.parametrize("seed", range(30))
def test_random_in_place_updates_keep_their_meaning(seed: int) -> None:
    """Snapshot alone, and the whole pipeline run with shuffled parallel loops: equal to the original."""
    rng = np.random.default_rng(seed)
    stmts = "\n".join(rng.choice(DRIFT, size=int(rng.integers(1, 4))))
    body = f"  for i in 0..n - 1 {{\n    for j in 0..n {{\n      {stmts}\n    }}\n  }}\n"
    m = _kernel(body)
    _same(m, _run(m), n=6)
    _same(m, pipeline.lower(m), n=6, shuffles=(0, 1, 2), exact=False)  # reduce-gpu may reassociate


def test_local_arrays_are_not_snapshotted() -> None:
    # A local array's entry values are undefined: nothing to copy (and it is declared in the body).
    m = _kernel("  f64 w[n];\n  for i in 0..n - 1 {\n    w[i] = w[i + 1] * 0.5;\n  }\n  for i in 0..n {\n    v[i] = 1.0;\n  }\n")
    assert snapshot.run(m.kernels[0]) is m.kernels[0]


def test_a_read_node_shared_with_a_non_entry_read_is_not_listed() -> None:
    # The same IR node object in two statements: an entry read in the first (nothing written yet),
    # not in the second (after the write). Replacing by identity would change both, so neither is listed.
    m = _kernel("  for i in 0..n - 1 {\n    v[i] = v[i + 1] * 0.5;\n  }\n")
    k = m.kernels[0]
    (loop,) = k.body
    assert isinstance(loop, ir.For)
    (stmt,) = loop.body
    assert isinstance(stmt, ir.Assign)
    read = stmt.value.lhs  # v[i + 1], one object
    later = ir.Assign(ir.Index("v", (ir.Var("i", ir.I32),), ir.F64), read)
    k2 = ir.Kernel(k.name, k.params, (loop, ir.For("i", ir.I32, loop.lo, loop.hi, 1, (later,))))
    assert deps.entry_reads(k)["v"] == [read]
    assert "v" not in deps.entry_reads(k2)

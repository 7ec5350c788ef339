"""Loop interchange: move dependence-free loops outward past loops that carry dependences.

**Precondition**: valid IR (``ircheck.check``) without ``Launch`` regions (it runs
before ``map-gpu``); a kernel that already contains a ``Launch`` is returned
unchanged.

**Postcondition**: the same program in which some perfectly nested pairs
``for a { for b { S } }`` (reachable from the top level through loop bodies
alone) became ``for b { for a { S } }``.  A pair is swapped only when ``a``
carries a dependence, ``b`` carries none, ``b``'s bounds do not read ``a``'s
variable (rectangular) and are side-effect and fault free (no array reads,
division or calls), and every dependence carried by ``a`` has direction
``=`` at ``b``'s level: the permuted direction vectors ``(=, <)`` stay
lexicographically positive (legal) and ``b`` still carries nothing in its new
place (so swaps never undo each other).  The dependence graph
(:func:`passes.deps.analyze`) is recomputed after every swap.

Before::

    for i in 0..ni {
      for k in 0..nk {
        for j in 0..nj {
          C[i][j] += alpha * A[i][k] * B[k][j];
        }
      }
    }

After::

    for i in 0..ni {
      for j in 0..nj {
        for k in 0..nk {
          C[i][j] += alpha * A[i][k] * B[k][j];
        }
      }
    }
"""

from __future__ import annotations

import dataclasses

import networkx as nx

from passes import deps
from passes.distribute import count
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with parallel loops moved outward where interchange is legal."""
    return deps.rewrite_to_fixpoint(kernel, lambda body, graph: _block(body, graph, [0], 0))


def _block(body: tuple[ir.Stmt, ...], graph: nx.MultiDiGraph, counter: list[int],
           depth: int) -> tuple[ir.Stmt, ...] | None:
    """``body`` after the first legal, useful swap (outermost first), or None."""
    for n, s in enumerate(body):
        if not isinstance(s, ir.For):
            counter[0] += count(s)
            continue
        seq = counter[0]
        if _swappable(s, seq, graph, depth + 1):
            inner = s.body[0]
            assert isinstance(inner, ir.For), f"not a perfect pair: {s!r}"
            swapped = dataclasses.replace(inner, body=(dataclasses.replace(s, body=inner.body),))
            return body[:n] + (swapped,) + body[n + 1:]
        counter[0] += 1
        new = _block(s.body, graph, counter, depth + 1)
        if new is not None:
            return body[:n] + (dataclasses.replace(s, body=new),) + body[n + 1:]
    return None


def _swappable(outer: ir.For, seq: int, graph: nx.MultiDiGraph, level: int) -> bool:
    """May (and should) ``outer`` (``S<seq>``, at 1-based ``level``) swap with its only child loop?"""
    if len(outer.body) != 1 or not isinstance(outer.body[0], ir.For):
        return False
    inner = outer.body[0]
    for bound in (inner.lo, inner.hi):
        for x in ir.walk(bound):
            if isinstance(x, (ir.Index, ir.Call)) or (isinstance(x, ir.Var) and x.name == outer.var):
                return False
            if isinstance(x, ir.Binary) and x.op in ("/", "%"):
                return False
    outer_id, inner_id = f"S{seq}", f"S{seq + 1}"
    carried_by_outer = False
    for _, _, d in graph.edges(data=True):
        if d["loop"] == inner_id:
            return False  # the inner loop is not parallel: nothing to gain
        if d["loop"] == outer_id:
            carried_by_outer = True
            if len(d["direction"]) <= level or d["direction"][level] != "=":
                return False
    return carried_by_outer

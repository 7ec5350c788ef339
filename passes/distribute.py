"""Loop distribution (fission): split a loop over groups of its body statements to expose perfect nests.

**Precondition**: valid IR (``ircheck.check``) without ``Launch`` regions (it runs
before ``map-gpu``); a kernel that already contains a ``Launch`` is returned
unchanged.

**Postcondition**: the same program in which loops reachable from the top
level through loop bodies alone (not inside an ``If``) may be split into
several consecutive copies, each running a subset of the original body in
its original order.  Legality comes from :func:`passes.deps.analyze`: for a
loop at level ``d``, the dependences between its body statements that are
loop-independent or carried at level ``>= d`` form a graph over the body's
top-level statements; each strongly connected component (a dependence
cycle) stays in one copy, and the copies follow a topological order of the
condensed graph, ties broken by original position (so statements keep their
relative order unless a dependence forces otherwise).  Statements that share
a scalar declared directly in the loop body stay together (the scalar's
scope).  Inner loops are split first; the dependence graph is recomputed
after every split.

Before::

    for i in 0..ni {
      for j in 0..nj {
        C[i][j] *= beta;
      }
      for k in 0..nk {
        for j in 0..nj {
          C[i][j] += alpha * A[i][k] * B[k][j];
        }
      }
    }

After::

    for i in 0..ni {
      for j in 0..nj {
        C[i][j] *= beta;
      }
    }
    for i in 0..ni {
      for k in 0..nk {
        for j in 0..nj {
          C[i][j] += alpha * A[i][k] * B[k][j];
        }
      }
    }
"""

from __future__ import annotations

import dataclasses

import networkx as nx

from passes import deps
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its loops distributed over their dependence components where legal."""
    return deps.rewrite_to_fixpoint(kernel, lambda body, graph: _block(body, graph, [0], 0))


def count(stmt: ir.Stmt) -> int:
    """How many statement ids (:mod:`passes.accesses`) ``stmt`` occupies, itself included."""
    return sum(isinstance(n, (ir.Assign, ir.Decl, ir.If, ir.For, ir.Return)) for n in ir.walk(stmt))


def _block(body: tuple[ir.Stmt, ...], graph: nx.MultiDiGraph, counter: list[int],
           depth: int) -> tuple[ir.Stmt, ...] | None:
    """``body`` after the first possible split (innermost loops first), or None if none applies.

    ``counter`` holds the statement id of the next statement (pre-order).
    """
    for n, s in enumerate(body):
        if not isinstance(s, ir.For):
            counter[0] += count(s)
            continue
        seq = counter[0]
        counter[0] += 1
        inner = _block(s.body, graph, counter, depth + 1)
        if inner is not None:
            return body[:n] + (dataclasses.replace(s, body=inner),) + body[n + 1:]
        split = _split(s, seq, graph, depth + 1)
        if split is not None:
            return body[:n] + split + body[n + 1:]
    return None


def _split(loop: ir.For, seq: int, graph: nx.MultiDiGraph, level: int) -> tuple[ir.For, ...] | None:
    """``loop`` (statement id ``S<seq>``, at 1-based ``level``) as several loops, or None."""
    if len(loop.body) < 2:
        return None
    owner: dict[str, int] = {}
    pos = seq + 1
    for c, child in enumerate(loop.body):
        for k in range(count(child)):
            owner[f"S{pos + k}"] = c
        pos += count(child)
    g = nx.DiGraph()
    g.add_nodes_from(range(len(loop.body)))
    for u, v, d in graph.edges(data=True):
        if u in owner and v in owner and (d["level"] == 0 or d["level"] >= level):
            if owner[u] != owner[v]:
                g.add_edge(owner[u], owner[v])
    # A scalar declared in the body is scoped to it: its users stay together.
    for c, child in enumerate(loop.body):
        if isinstance(child, ir.Decl):
            for c2, other in enumerate(loop.body):
                if c2 != c and child.name in _names(other):
                    g.add_edge(c, c2)
                    g.add_edge(c2, c)
    cond = nx.condensation(g)
    if cond.number_of_nodes() < 2:
        return None
    order = nx.lexicographical_topological_sort(cond, key=lambda x: min(cond.nodes[x]["members"]))
    groups = [sorted(cond.nodes[x]["members"]) for x in order]
    # NOTE: an inner loop whose every piece would still carry a dependence, and hold no loop,
    # stays whole: the pieces run one after another in the same thread either way, and the split
    # only sends values through memory (adi's p and q recurrences over j: the fused loop keeps
    # p[j - 1] in a register; split, the second loop reads it back, 1.13x slower on the H200).
    if level > 1 and all(not any(isinstance(x, ir.For) for c in grp for x in ir.walk(loop.body[c]))
                         and _carried(graph, owner, set(grp), level) for grp in groups):
        return None
    return tuple(dataclasses.replace(loop, body=tuple(loop.body[c] for c in grp)) for grp in groups)


def _carried(graph: nx.MultiDiGraph, owner: dict[str, int], group: set[int], level: int) -> bool:
    """Some dependence between statements of ``group`` (body positions) is carried at ``level``."""
    return any(d["level"] == level for u, v, d in graph.edges(data=True)
               if owner.get(u) in group and owner.get(v) in group)


def _names(node: ir.Node) -> set[str]:
    return {n.name for n in ir.walk(node) if isinstance(n, (ir.Var, ir.Decl))}

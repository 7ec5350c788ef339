"""Scatter updates made atomic: which loops may run in parallel when their updates ``A[f] += e`` are atomic.

An analysis used by :mod:`passes.map_gpu` (which marks the loops it launches ``atomic(A, ...)``) and
by :mod:`transpile.ir.check` (which proves every mark again).  A histogram::

    for i in 0..n {
      i32 b = data[i] % nbins;
      hist[b] += 1;
    }

carries a dependence on ``hist`` (two iterations may hit the same bin), so no loop of it is
parallel and it ran on one GPU thread.  But the only thing its iterations share is updates that
commute: run in any order, with each update atomic, they give the same ``hist``.

**Rule** (:func:`scatter_arrays`, :func:`carried_only_on`).  Loop ``L`` may run its iterations in
parallel with atomic updates of the arrays ``S`` when

1. every access of an array of ``S`` inside ``L`` is an *update* ``A[f] = A[f] + e``,
   ``A[f] = e + A[f]`` or ``A[f] = A[f] - e`` (the read of ``A[f]`` inside the statement's own
   value included), and neither ``f`` nor ``e`` reads an array of ``S``: the updates of one
   iteration read nothing another iteration's updates write;
2. the element type has a CUDA atomic add: ``i32``, ``u32``, ``i64``, ``u64`` (exact: integer
   addition commutes and associates, wrapping alike in every order), and ``f32``/``f64`` only where
   reassociation is allowed (float addition in another order rounds differently, as a parallel
   reduction's does);
3. every dependence ``L`` carries (exact analysis, :mod:`passes.deps`) is on an array of ``S``.

Then any interleaving of ``L``'s iterations, each update atomic, gives ``S`` the values the
sequential loop gives (up to the float rounding of 2.), and every other value is computed as the
sequential loop does (3.).  Inner loops of ``L`` are the thread's own, in order.

Nothing here rewrites IR.  Integer ``min``/``max`` and bit operations have CUDA atomics too but no
accumulation form in the IR (:mod:`transpile.ir.accum` knows ``+ * min max`` over ``fmin``/``fmax``,
which are float functions, and float min/max have no atomic): not taken.
"""

from __future__ import annotations

from collections.abc import Iterable

import networkx as nx

from transpile import ir
from transpile.ir import accum

#: Element types with an atomic add (float ones only when reassociation is allowed).
EXACT_TYPES = frozenset({ir.I32, ir.U32, ir.I64, ir.U64})
FLOAT_TYPES = frozenset({ir.F32, ir.F64})


def update(s: ir.Stmt) -> tuple[ir.Index, ir.Index, str, ir.Expr] | None:
    """``(target, the read of it in the value, '+' or '-', e)`` of an update ``A[f] = A[f] +- e``
    (or ``e + A[f]``), else None."""
    a = accum.accumulation(s)
    if a is None or a.op != "+" or not isinstance(a.target, ir.Index):
        return None
    v = s.value  # type: ignore[union-attr]
    assert isinstance(v, ir.Binary), v
    read = v.lhs if v.lhs == a.target else v.rhs
    assert isinstance(read, ir.Index), read
    return a.target, read, v.op, a.term


def scatter_arrays(loop: ir.For, *, reassociate: bool = True) -> tuple[str, ...]:
    """The arrays ``loop`` accesses only by updates that conditions 1 and 2 of the module docstring
    allow (sorted; () if none, or if such arrays' updates read one another)."""
    updated = sorted({u[0].array for s in ir.walk(loop) if isinstance(s, ir.Assign) and (u := update(s)) is not None})
    names = tuple(a for a in updated if problem(loop, (a,), reassociate=reassociate) is None)
    return names if names and problem(loop, names, reassociate=reassociate) is None else ()


def problem(loop: ir.For, arrays: Iterable[str], *, reassociate: bool = True) -> tuple[ir.Node, str] | None:
    """Why conditions 1 and 2 fail for ``arrays`` in ``loop`` (a node and a message), or None."""
    names = set(arrays)
    allowed: set[int] = set()
    for s in ir.walk(loop):
        u = update(s) if isinstance(s, ir.Assign) else None
        if u is None or u[0].array not in names:
            continue
        target, read, _op, term = u
        if not (target.ty in EXACT_TYPES or (reassociate and target.ty in FLOAT_TYPES)):
            return s, f"array '{target.array}' of type {target.ty} has no exact atomic add"
        for e in (*target.indices, term):
            for n in ir.walk(e):
                if isinstance(n, ir.Index) and n.array in names:
                    return n, f"an update of '{target.array}' reads '{n.array}', which the loop updates atomically"
        allowed |= {id(target), id(read)}
    for n in ir.walk(loop):
        if isinstance(n, ir.Index) and n.array in names and id(n) not in allowed:
            return n, f"'{n.array}' is accessed other than by an update 'A[f] += e'"
    return None


def carried_names(graph: nx.MultiDiGraph, loop_id: str) -> set[str]:
    """The arrays and scalars of the dependences the loop ``loop_id`` carries in ``graph``."""
    return {d["name"] for _, _, d in graph.edges(data=True) if d["level"] and d["loop"] == loop_id}


def carried_only_on(graph: nx.MultiDiGraph, loop_id: str, arrays: Iterable[str]) -> bool:
    """Condition 3: every dependence the loop ``loop_id`` carries in ``graph`` is on ``arrays``."""
    return carried_names(graph, loop_id) <= set(arrays)

"""Reduction recognition: loops whose only carried dependences are one accumulation.

An analysis: ``analyze(kernel) -> list[Reduction]``.  A statement ``S`` of the
form ``x = x op e`` (or ``x = e op x``, or ``x = fmin/fmax(x, e)``), where
``x`` is a scalar or an array element ``A[f]`` and ``e`` does not read ``x``'s
variable, is a *reduction over loop L* when

* every dependence carried by ``L`` is a dependence of ``S`` on itself
  through ``x``'s variable (so ``L`` would be parallel but for the
  accumulation), and
* no other statement inside ``L`` touches ``x``'s variable (no one observes
  the partial sums).

Then the iterations of ``L`` may run in any order provided the combinations
with ``op`` are reassociated (exact for integer ``+ * min max``; for floats
this changes rounding, which is why code generation only uses it when
reassociation is allowed).  Operators: ``+``, ``*``, ``min``, ``max``.

Before (gemm's inner loop)::

    for k in 0..nk {
      C[i][j] += alpha * A[i][k] * B[k][j];
    }

Result: ``Reduction(loop='S5', stmt='S6', name='C', op='+')``.
"""

from __future__ import annotations

from dataclasses import dataclass

from passes import accesses, deps
from transpile import ir

_COMMUTATIVE = ("+", "*")
_MINMAX = {"fmin": "min", "fminf": "min", "fmax": "max", "fmaxf": "max"}


@dataclass(frozen=True, slots=True)
class Reduction:
    """Statement ``stmt`` accumulates into ``name`` with ``op`` across loop ``loop``."""

    loop: str
    loop_var: str
    stmt: str
    name: str
    op: str


def reduction_op(s: ir.Stmt) -> str | None:
    """The operator if ``s`` is ``x = x op e`` with ``e`` free of ``x``'s variable, else None."""
    if not isinstance(s, ir.Assign):
        return None
    t, v = s.target, s.value
    name = t.name if isinstance(t, ir.Var) else t.array
    if isinstance(v, ir.Binary) and v.op in ("+", "*", "-"):
        if v.lhs == t:
            other = v.rhs
        elif v.rhs == t and v.op in _COMMUTATIVE:
            other = v.lhs
        else:
            return None
        op = "+" if v.op == "-" else v.op  # x = x - e accumulates -e
    elif isinstance(v, ir.Call) and v.fn in _MINMAX and len(v.args) == 2 and t in v.args:
        other = v.args[1] if v.args[0] == t else v.args[0]
        op = _MINMAX[v.fn]
    else:
        return None
    if any(_names(n) == name for n in ir.walk(other)):
        return None
    return op


def _names(n: ir.Node) -> str | None:
    if isinstance(n, ir.Var):
        return n.name
    if isinstance(n, ir.Index):
        return n.array
    return None


def analyze(kernel: ir.Kernel) -> list[Reduction]:
    """The reductions of ``kernel``, one per (loop, statement), in program order.

    Several reductions may share a loop (gesummv accumulates two sums over
    ``j``): the loop qualifies when each of its carried dependences is the
    self-dependence of one of them.
    """
    stmts = accesses.analyze(kernel)
    graph = deps.analyze(kernel)
    ids = deps.loop_ids(kernel)
    carried: dict[str, list[tuple[str, str, str]]] = {}
    for u, v, d in graph.edges(data=True):
        if d["level"]:
            carried.setdefault(d["loop"], []).append((u, v, d["name"]))
    candidates: dict[str, tuple[str, str]] = {}  # stmt id -> (variable, op)
    for s in stmts:
        op = reduction_op(s.node)  # type: ignore[arg-type]
        if op is not None:
            target = s.node.target  # type: ignore[attr-defined]
            candidates[s.id] = (target.name if isinstance(target, ir.Var) else target.array, op)
    found: list[Reduction] = []
    for s in stmts:
        if s.id not in candidates:
            continue
        name, op = candidates[s.id]
        for loop in s.loops:
            lid = ids[id(loop)]
            edges = carried.get(lid, [])
            if not any(u == v == s.id for u, v, _ in edges):
                continue  # nothing carried through s here: not a reduction over this loop
            if not all(u == v and u in candidates and candidates[u][0] == x for u, v, x in edges):
                continue
            others = [t for t in stmts if t.id != s.id and any(lp is loop for lp in t.loops)]
            if any(a.name == name for t in others for a in t.accesses):
                continue
            found.append(Reduction(lid, loop.var, s.id, name, op))
    return found

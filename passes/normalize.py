"""Loop normalisation: a parallel loop of non-unit step counts its iterations from zero by one.

A GPU launch spreads a loop's iterations ``0..trip`` over threads; map-gpu maps unit-step loops only.
A loop with another step (``i += 2``, ``i -= 2`` from ``n - 1``, and every downward loop) that the
dependence analysis (:mod:`passes.deps`, exact for strided domains) finds carrying no dependence is
rewritten to count its iterations ``t`` upward by one, its body reading ``lo + step * t`` (upward) or
``hi - 1 + step * t`` (downward) for the old variable (Allen & Kennedy's loop normalisation, done only
where it frees a loop).  The counter keeps the old variable's name: every use is replaced at once, so
nothing else can mean it.  The trip count is ``(hi - lo + |step| - 1) / |step|``, C division
truncating toward zero, so an empty range (``hi <= lo``) stays empty (for an unsigned counter, where
``hi - lo`` would wrap, ``hi > lo ? ... : 0``).

**Precondition**: valid IR without ``Launch`` regions (run before map-gpu).

**Postcondition**: every loop the analysis proves parallel has step 1; loops that carry a dependence,
and every loop when isl cannot answer, are unchanged; the program computes the same values.

Before::

    for i in 0..n step 2 {
      a[i] = b[i] + 1.0f;
    }

After::

    for i in 0..(n - 0 + 1) / 2 {
      a[2 * i] = b[2 * i] + 1.0f;
    }
"""

from __future__ import annotations

import dataclasses

from passes import deps
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its parallel non-unit-step loops normalised (the same object if there is none)."""
    if not any(isinstance(n, ir.For) and n.step != 1 for n in ir.walk(kernel)):
        return kernel
    if ir.is_mapped(kernel):
        return kernel
    ids = deps.loop_ids(kernel)
    graph = deps.analyze_or_none(kernel)
    if graph is None:
        return kernel
    free = deps.parallel_loops(kernel, graph)
    todo = {id(n) for n in ir.walk(kernel) if isinstance(n, ir.For) and n.step != 1 and ids.get(id(n)) in free}
    if not todo:
        return kernel
    return _Normalize(todo).transform(kernel)  # type: ignore[return-value]


class _Normalize(ir.Transformer):
    def __init__(self, todo: set[int]) -> None:
        self.todo = todo

    def visit_For(self, loop: ir.For) -> ir.Node:
        marked = id(loop) in self.todo
        new = self.generic_visit(loop)
        assert isinstance(new, ir.For)
        return _normalized(new) if marked else new


def _normalized(loop: ir.For) -> ir.For:
    ty, step, loc = loop.ty, loop.step, loop.loc
    t = ir.Var(loop.var, ty, loc=loc)
    span = abs(step)
    diff = ir.binary("-", loop.hi, loop.lo, loc=loc)
    count = _div(ir.binary("+", diff, ir.const(span - 1, diff.ty, loc=loc), loc=loc), span, diff.ty, loc)
    if not diff.ty.is_signed:  # hi - lo wraps when the range is empty: count nothing then
        count = ir.select(ir.binary(">", loop.hi, loop.lo, loc=loc), count, ir.const(0, diff.ty, loc=loc), loc=loc)
    count = ir.cast(count, ty)
    if step > 0:  # lo, lo + step, ...
        moved = ir.binary("*", ir.const(step, ty, loc=loc), t, loc=loc)
        value = moved if _is_zero(loop.lo) else ir.binary("+", loop.lo, moved, loc=loc)
    else:  # hi - 1, hi - 1 - |step|, ...
        first = ir.binary("-", loop.hi, ir.const(1, ty, loc=loc), loc=loc)
        value = ir.binary("-", first, t if span == 1 else ir.binary("*", ir.const(span, ty, loc=loc), t, loc=loc),
                          loc=loc)
    body = tuple(ir.substitute(s, {loop.var: value}) for s in loop.body)
    return dataclasses.replace(loop, lo=ir.const(0, ty, loc=loc), hi=count, step=1, body=body)


def _div(e: ir.Expr, d: int, ty: ir.Scalar, loc: object) -> ir.Expr:
    if d == 1:
        return e
    return ir.binary("/", e, ir.const(d, ty, loc=loc), loc=loc)  # type: ignore[arg-type]


def _is_zero(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.value == 0

"""Constant and copy propagation of integer scalars into the code that reads them (subscripts, bounds).

The dependence test (:mod:`passes.deps`) is exact for subscripts that are affine in loop variables and
parameters; a subscript through a local (``int k = 5; a[i + k]``, ``j = i + m; b[j]``) is opaque to it,
and the loop stays sequential.  This pass replaces such a local by its value where that is the same:

* a ``Decl`` of an integer scalar with an initialiser, the scalar never assigned afterwards, is replaced
  everywhere by its initialiser (and dropped) when the initialiser is *stable*: affine, reading no array
  and only loop variables and scalars that nothing in the kernel assigns, so it means the same wherever
  the scalar is read (a non-affine one, ``h = n / 2``, stays: the analysis reads such a top-level local
  as a parameter);
* an assignment ``j = e`` of an integer scalar (``e`` stable and not reading ``j``) is propagated into the
  statements after it in the same block, up to the first that assigns ``j`` again; the assignment stays
  (the scalar may be read after the block).

Only integer scalars move: they are what subscripts and bounds read, and integer arithmetic is exact, so
the value is bit for bit the same.

**Precondition**: valid IR without ``Launch`` regions.

**Postcondition**: valid IR computing the same values; fewer integer scalars between loop variables
and subscripts.

Before::

    i32 k = 5;
    for i in 0..n - k {
      a[i] = a[i + k] + b[i];
    }

After::

    for i in 0..n - 5 {
      a[i] = a[i + 5] + b[i];
    }
"""

from __future__ import annotations

import dataclasses

from passes import accesses
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with stable integer locals propagated (the same object when there is none)."""
    if ir.is_mapped(kernel):
        return kernel
    assigned = {s.target.name for s in ir.statements(kernel) if isinstance(s, ir.Assign)
                and isinstance(s.target, ir.Var)}
    loop_vars = {s.var for s in ir.statements(kernel) if isinstance(s, ir.For)}
    body = _Propagate(assigned, loop_vars).block(kernel.body)
    if len(body) == len(kernel.body) and all(a is b for a, b in zip(body, kernel.body)):
        return kernel
    return dataclasses.replace(kernel, body=body)


class _Propagate:
    def __init__(self, assigned: set[str], loop_vars: set[str]) -> None:
        self.assigned = assigned
        self.loop_vars = loop_vars

    def stable(self, e: ir.Expr) -> bool:
        """Does ``e`` mean the same wherever it is read (no arrays, no calls, no assigned scalars), and is
        it affine or a polynomial (``i * n + j``, a nest's counter: delinearize reads it; ``n / 2`` stays a
        local: read as a parameter, it is clearer to the analysis)?"""
        if accesses.affine(e, ir.identifiers(e)) is None and not _polynomial(e):
            return False
        for n in ir.walk(e):
            if isinstance(n, (ir.Index, ir.Call)):
                return False
            if isinstance(n, ir.Var) and n.name in self.assigned and n.name not in self.loop_vars:
                return False
        return True

    def block(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        rest = list(stmts)
        while rest:
            s = rest.pop(0)
            if (isinstance(s, ir.Decl) and s.ty.is_int and s.init is not None and s.name not in self.assigned
                    and self.stable(s.init)):
                table = {s.name: s.init}
                rest = [ir.substitute(r, table) for r in rest]
                continue
            if (isinstance(s, ir.Assign) and isinstance(s.target, ir.Var) and s.target.ty.is_int
                    and s.value.ty == s.target.ty and self.stable(s.value)
                    and s.target.name not in ir.identifiers(s.value)):
                table = {s.target.name: s.value}
                for k, r in enumerate(rest):
                    if s.target.name in ir.scalars_written(r):
                        break
                    rest[k] = ir.substitute(r, table)
            out.append(self.inner(s))
        return tuple(out)

    def inner(self, s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.For):
            body = self.block(s.body)
            return s if _same(body, s.body) else dataclasses.replace(s, body=body)
        if isinstance(s, ir.If):
            then, orelse = self.block(s.then), self.block(s.orelse)
            if _same(then, s.then) and _same(orelse, s.orelse):
                return s
            return dataclasses.replace(s, then=then, orelse=orelse)
        return s


def _polynomial(e: ir.Expr) -> bool:
    """``e`` is built of integer variables and constants by ``+``, ``-`` and ``*`` (signed: no wrap-around
    to reason about) and widening casts."""
    for n in ir.walk(e):
        if isinstance(n, (ir.Var, ir.Const)):
            continue
        if isinstance(n, ir.Binary) and n.op in ("+", "-", "*") and n.ty.is_int and n.ty.is_signed:
            continue
        if isinstance(n, ir.Unary) and n.op == "-":
            continue
        if isinstance(n, ir.Cast) and n.ty.is_int and n.ty.is_signed and n.operand.ty.is_int \
                and n.ty.bits >= n.operand.ty.bits:
            continue
        return False
    return e.ty.is_int


def _same(a: tuple[ir.Stmt, ...], b: tuple[ir.Stmt, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))

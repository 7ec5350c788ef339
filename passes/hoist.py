"""Invariant quotients named: ``n / 2`` in a subscript or a loop bound becomes a parameter of the kernel entry.

The dependence test (:mod:`passes.deps`) is exact for subscripts affine in loop variables and
parameters, where a parameter is an integer scalar nothing writes (a scalar argument, a top-level
local assigned once).  ``a[i] = a[i + n / 2]`` for ``i < n / 2`` reads the upper half and writes the
lower one, but ``n / 2`` is not affine, so the subscript is opaque and the loop stays sequential.
Every occurrence of ``n / 2`` has the same value, though (``n`` never changes), so naming it
``i32 n_by2 = n / 2;`` at the kernel's entry makes it a parameter, and the test proves
``i + n_by2 != i'`` for ``0 <= i, i' < n_by2``.

Named: the smallest subexpressions ``e / c`` and ``e % c`` of subscripts and loop bounds where ``c`` is
an integer constant other than 0 and -1 (so evaluating them at the entry cannot fault where C would
not have evaluated them) and ``e`` reads only integer scalar arguments that nothing assigns (and names
already given), no array and no call.  Equal expressions get one name.  Integer arithmetic is exact,
so each use reads the value C computes there.

**Precondition**: valid IR without ``Launch`` regions.

**Postcondition**: valid IR computing the same values; no such quotient left in a subscript or bound.

Before::

    for i in 0..n / 2 {
      a[i] = a[i + n / 2] + b[i];
    }

After::

    i32 n_by2 = n / 2;
    for i in 0..n_by2 {
      a[i] = a[i + n_by2] + b[i];
    }
"""

from __future__ import annotations

import dataclasses

from passes.builders import fresh_name
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its invariant quotients named at the entry (the same object if there is none)."""
    if ir.is_mapped(kernel):
        return kernel
    if not any(isinstance(n, ir.Binary) and n.op in ("/", "%") for n in ir.walk(kernel)):
        return kernel
    assigned = ir.scalars_written(kernel)
    declared = {n.name for n in ir.statements(kernel) if isinstance(n, ir.Decl)}
    declared |= {n.var for n in ir.statements(kernel) if isinstance(n, ir.For)}
    params = {p.name for p in kernel.params if isinstance(p.ty, ir.Scalar) and p.ty.is_int
              and p.name not in assigned and p.name not in declared}
    h = _Hoist(params, ir.identifiers(kernel))
    body = h.block(kernel.body)
    if not h.decls:
        return kernel
    return dataclasses.replace(kernel, body=(*h.decls, *body))


class _Hoist(ir.Transformer):
    def __init__(self, params: set[str], used: set[str]) -> None:
        self.params = params
        self.used = used
        self.names: dict[ir.Expr, ir.Var] = {}
        self.decls: list[ir.Decl] = []

    def block(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out = tuple(self.stmt(s) for s in stmts)
        return stmts if all(a is b for a, b in zip(out, stmts)) else out

    def stmt(self, s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.For):
            lo, hi, body = self.transform(s.lo), self.transform(s.hi), self.block(s.body)
            if lo is s.lo and hi is s.hi and body is s.body:
                return s
            return dataclasses.replace(s, lo=lo, hi=hi, body=body)
        if isinstance(s, ir.If):
            then, orelse = self.block(s.then), self.block(s.orelse)
            return s if then is s.then and orelse is s.orelse else dataclasses.replace(s, then=then, orelse=orelse)
        if isinstance(s, ir.Assign):
            target, value = self.subscripts(s.target), self.subscripts(s.value)
            assert isinstance(target, (ir.Var, ir.Index)), f"an assignment to {target!r}"
            return s if target is s.target and value is s.value else dataclasses.replace(s, target=target, value=value)
        if isinstance(s, ir.Decl) and s.init is not None:
            init = self.subscripts(s.init)
            return s if init is s.init else dataclasses.replace(s, init=init)
        return s

    def subscripts(self, e: ir.Expr) -> ir.Expr:
        """``e`` with the subscripts of its array references rewritten."""
        return _Subscripts(self).transform(e)  # type: ignore[no-any-return]

    def visit_Binary(self, e: ir.Binary) -> ir.Node:
        new = self.generic_visit(e)
        if not (isinstance(new, ir.Binary) and new.op in ("/", "%") and new.ty.is_int
                and isinstance(new.rhs, ir.Const) and new.rhs.value not in (0, -1)):
            return new
        for n in ir.walk(new.lhs):
            if isinstance(n, (ir.Index, ir.Call)):
                return new
            if isinstance(n, ir.Var) and n.name not in self.params:
                return new
        found = self.names.get(new)
        if found is None:
            base = new.lhs.name if isinstance(new.lhs, ir.Var) else "inv"
            name = fresh_name(f"{base}_{'by' if new.op == '/' else 'mod'}{abs(int(new.rhs.value))}", self.used)
            self.used.add(name)
            found = self.names[new] = ir.Var(name, new.ty, loc=new.loc)
            self.decls.append(ir.Decl(name, new.ty, new, loc=new.loc))
            self.params.add(name)
        return found


class _Subscripts(ir.Transformer):
    """Rewrites only inside the subscripts of array references."""

    def __init__(self, hoist: _Hoist) -> None:
        self.hoist = hoist

    def visit_Index(self, e: ir.Index) -> ir.Node:
        indices = tuple(self.hoist.transform(self.transform(x)) for x in e.indices)
        return e if all(a is b for a, b in zip(indices, e.indices)) else dataclasses.replace(e, indices=indices)

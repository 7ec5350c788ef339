"""Wrap-around scalars: the first iteration peeled, the others reading the previous iteration's value.

``im1 = n - 1; for (i = 0; i < n; i++) { a[i] = b[i] + b[im1]; im1 = i; }`` carries ``im1`` from each
iteration to the next, so the loop is sequential.  But from the second iteration on, ``im1`` holds
what its assignment computed one iteration earlier: where that value ``e`` reads only the loop
variable, scalars the loop does not write and arrays it does not write, it is ``e`` with ``i - 1`` for
``i`` (Wolfe's wrap-around variables; Allen & Kennedy, loop peeling).  This pass rewrites such a loop
``for i in lo..hi`` (unit step) whose scalar ``w`` (declared outside it) is assigned once, by a
top-level statement ``w = e`` after every read of ``w`` in the body, as

* the first iteration, peeled: ``if (lo < hi) { body with lo for i }`` (its locals renamed),
* ``for i in lo + 1..hi { body, w read as e[i - 1], its assignment dropped }``,
* ``if (lo + 1 < hi) { w = e[hi - 1]; }``: the value C leaves in ``w``.

Done only where the remaining loop then writes no scalar declared outside it (else nothing is freed);
the dependence test decides whether it is parallel.

**Precondition**: valid IR without ``Launch`` regions.

**Postcondition**: valid IR computing the same values.

Before::

    for i in 0..n {
      a[i] = b[i] - prev;
      prev = b[i];
    }

After::

    if (0 < n) {
      a[0] = b[0] - prev;
      prev = b[0];
    }
    for i in 0 + 1..n {
      a[i] = b[i] - b[i - 1];
    }
    if (0 + 1 < n) {
      prev = b[n - 1];
    }
"""

from __future__ import annotations

import dataclasses

from passes.builders import rename_decls
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the wrap-around scalars of its loops peeled (the same object if there are none)."""
    if ir.is_mapped(kernel):
        return kernel
    p = _Peel(ir.identifiers(kernel))
    body = p.block(kernel.body)
    return kernel if not p.changed else dataclasses.replace(kernel, body=body)


class _Peel:
    def __init__(self, used: set[str]) -> None:
        self.used = used
        self.changed = False

    def block(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.For):
                s = dataclasses.replace(s, body=self.block(s.body))
                out.extend(self.loop(s))
            elif isinstance(s, ir.If):
                out.append(dataclasses.replace(s, then=self.block(s.then), orelse=self.block(s.orelse)))
            else:
                out.append(s)
        return tuple(out)

    def loop(self, loop: ir.For) -> list[ir.Stmt]:
        """``loop`` peeled for its wrap-around scalars, only where that leaves it writing no scalar
        declared outside it (else the peel frees nothing: deriche's recurrences keep their form)."""
        got = self.peel(loop)
        main = next(s for s in got if isinstance(s, ir.For))
        if len(got) == 1 or ir.outer_scalars_written(main):
            return [loop]
        self.changed = True
        return got

    def peel(self, loop: ir.For) -> list[ir.Stmt]:
        if loop.step != 1:
            return [loop]
        found = _wraparound(loop)
        if found is None:
            return [loop]
        k, target, value = found
        loc, ty = loop.loc, loop.ty
        i = ir.Var(loop.var, ty, loc=loc)
        prev = ir.substitute(value, {loop.var: ir.binary("-", i, ir.const(1, ty, loc=loc), loc=loc)})
        rest = tuple(ir.substitute(s, {target.name: prev}) if j < k else s
                     for j, s in enumerate(loop.body) if j != k)
        first = self.renamed(tuple(ir.substitute(s, {loop.var: loop.lo}) for s in loop.body))
        start = ir.binary("+", loop.lo, ir.const(1, ty, loc=loc), loc=loc)
        last = ir.substitute(value, {loop.var: ir.binary("-", loop.hi, ir.const(1, ty, loc=loc), loc=loc)})
        return [ir.If(ir.binary("<", loop.lo, loop.hi, loc=loc), first, (), loc=loc),
                *self.peel(dataclasses.replace(loop, lo=start, body=rest)),  # another wrap-around scalar
                ir.If(ir.binary("<", start, loop.hi, loc=loc), (ir.Assign(target, last, loc=loc),), (), loc=loc)]

    def renamed(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        """``stmts`` with every scalar they declare given a fresh name (no name is declared twice)."""
        return rename_decls(stmts, "_first", self.used)


def _wraparound(loop: ir.For) -> tuple[int, ir.Var, ir.Expr] | None:
    """``(k, w, e)``: body statement ``k`` is ``w = e``, the loop's only write of ``w`` (declared outside
    it), after every read of ``w``; ``e`` reads the loop variable, scalars the loop does not write and
    arrays it does not write.  None if there is no such scalar."""
    declared = {n.name for n in ir.statements(loop) if isinstance(n, ir.Decl)}
    written = ir.scalars_written(loop)
    arrays_written = {s.target.array for s in ir.statements(loop)
                      if isinstance(s, ir.Assign) and isinstance(s.target, ir.Index)}
    for k, s in enumerate(loop.body):
        if not (isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)):
            continue
        w = s.target
        if w.name in declared:
            continue
        writes = sum(1 for n in ir.statements(loop) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)
                     and n.target.name == w.name)
        if writes != 1:
            continue
        if any(_mentions(t, w.name) for t in loop.body[k + 1:]) or _mentions(s.value, w.name):
            continue
        ok = True
        for n in ir.walk(s.value):
            if isinstance(n, ir.Var) and n.name != loop.var and n.name in written:
                ok = False
            if isinstance(n, ir.Index) and n.array in arrays_written:
                ok = False
        if ok and any(_mentions(t, w.name) for t in loop.body[:k]):
            return k, w, s.value
    return None


def _mentions(node: ir.Node, name: str) -> bool:
    return any(isinstance(n, ir.Var) and n.name == name for n in ir.walk(node))

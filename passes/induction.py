"""Induction-variable substitution: a counter stepped by a constant in a loop, read as a subscript.

``j = 0; for (i ...) { a[j] = ...; j++; }`` carries ``j`` from one iteration to the next, so the loop
is sequential and ``a[j]`` opaque to the dependence test.  But ``j`` is a function of the iteration
number: where each iteration adds the same loop-invariant amounts to ``j`` in top-level statements of
the body (``j++``, ``j += 2``, ``k -= c``), its value at any point of iteration ``t`` is its value on
entry plus ``t`` times the sum of the steps plus the steps already taken in this iteration (Allen &
Kennedy, induction-variable substitution).  This pass

* copies ``j`` on entry into a fresh ``j_base`` before the loop,
* reads ``j_base + S * t + (steps so far)`` for ``j`` in the body, the increments dropped, where ``S``
  is the sum of the steps and ``t`` the iteration number (``i - lo`` upward, ``hi - 1 - i`` downward;
  unit steps only),
* and assigns ``j`` its exit value ``j_base + S * trip`` after the loop (a later read sees it).

A counter also written anywhere else in the body (a conditional increment: packing) is left alone, as
is every loop of non-unit step.  Innermost loops go first.  Afterwards :mod:`passes.constprop` runs
again so that ``j_base`` copies of constants and loop-invariant values reach the subscripts.

**Precondition**: valid IR without ``Launch`` regions.

**Postcondition**: valid IR computing the same values (integer arithmetic: exact).

Before::

    i32 j = 0;
    for i in 0..n {
      a[j] = b[i];
      j += 1;
    }

After (and constprop)::

    for i in 0..n {
      a[i] = b[i];
    }
"""

from __future__ import annotations

import dataclasses

from passes import constprop
from passes.builders import fresh_name
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with the induction variables of its unit-step loops substituted."""
    if ir.is_mapped(kernel):
        return kernel
    sub = _Substitute(kernel)
    body = sub.block(kernel.body)
    if not sub.changed:
        return kernel
    return constprop.run(dataclasses.replace(kernel, body=body))


class _Substitute:
    def __init__(self, kernel: ir.Kernel) -> None:
        self.kernel = kernel
        self.used = ir.identifiers(kernel)
        self.changed = False

    def block(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.For):
                loop = dataclasses.replace(s, body=self.block(s.body))
                out.extend(self.loop(loop, out))
            elif isinstance(s, ir.If):
                out.append(dataclasses.replace(s, then=self.block(s.then), orelse=self.block(s.orelse)))
            else:
                out.append(s)
        return tuple(out)

    def entry(self, name: str, ty: ir.Scalar, earlier: list[ir.Stmt], loc: object) -> ir.Expr:
        """The counter's value on entry to the loop: its declaration's initialiser where that is an earlier
        statement of the same block, constant until the loop (reads no array, and nothing after it writes
        the counter or a scalar the initialiser reads): two pointers into one array stay comparable.
        Else the counter itself."""
        for k in range(len(earlier) - 1, -1, -1):
            d = earlier[k]
            if isinstance(d, ir.Decl) and d.name == name:
                init = d.init
                if init is None or any(isinstance(n, (ir.Index, ir.Call)) for n in ir.walk(init)):
                    break
                reads = {n.name for n in ir.walk(init) if isinstance(n, ir.Var)}
                if any((reads | {name}) & ir.scalars_written(t) for t in earlier[k + 1:]):
                    break
                return init
        return ir.Var(name, ty, loc=loc)  # type: ignore[arg-type]

    def loop(self, loop: ir.For, earlier: list[ir.Stmt]) -> list[ir.Stmt]:
        if abs(loop.step) != 1:
            return [loop]
        before: list[ir.Stmt] = []
        after: list[ir.Stmt] = []
        for name, ty in _candidates(loop).items():
            steps = [s for s in loop.body if _step(s, name) is not None]
            base = fresh_name(f"{name}_base", self.used)
            self.used.add(base)
            before.append(ir.Decl(base, ty, self.entry(name, ty, earlier + before, loop.loc), loc=loop.loc))
            total: ir.Expr = ir.const(0, ty, loc=loop.loc)
            for s in steps:
                total = ir.binary("+", total, _step(s, name), loc=loop.loc)  # type: ignore[arg-type]
            t = ir.Var(loop.var, loop.ty, loc=loop.loc)
            count = ir.binary("-", t, loop.lo, loc=loop.loc) if loop.step > 0 else \
                ir.binary("-", ir.binary("-", loop.hi, ir.const(1, loop.ty, loc=loop.loc), loc=loop.loc), t,
                          loc=loop.loc)
            start = ir.binary("+", ir.Var(base, ty, loc=loop.loc),
                              ir.binary("*", ir.cast(count, ty), total, loc=loop.loc), loc=loop.loc)
            body: list[ir.Stmt] = []
            sofar: ir.Expr = ir.const(0, ty, loc=loop.loc)
            for s in loop.body:
                inc = _step(s, name)
                if inc is not None:
                    sofar = ir.binary("+", sofar, inc, loc=loop.loc)
                    continue
                now = ir.cast(ir.binary("+", start, sofar, loc=loop.loc), ty)
                body.append(ir.substitute(s, {name: now}))
            loop = dataclasses.replace(loop, body=tuple(body))
            trip = ir.binary("-", loop.hi, loop.lo, loc=loop.loc)
            trip = ir.select(ir.binary(">", loop.hi, loop.lo, loc=loop.loc), trip,
                             ir.const(0, trip.ty, loc=loop.loc), loc=loop.loc)
            exit_value = ir.binary("+", ir.Var(base, ty, loc=loop.loc),
                                   ir.binary("*", ir.cast(trip, ty), total, loc=loop.loc), loc=loop.loc)
            after.append(ir.Assign(ir.Var(name, ty, loc=loop.loc), ir.cast(exit_value, ty), loc=loop.loc))
            self.changed = True
        return [*before, loop, *after]


def _candidates(loop: ir.For) -> dict[str, ir.Scalar]:
    """Integer scalars that ``loop``'s body steps only in top-level statements by loop-invariant amounts."""
    written_top: dict[str, ir.Scalar] = {}
    nested: set[str] = set()
    for s in loop.body:
        if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var):
            written_top.setdefault(s.target.name, s.target.ty)
        else:
            nested |= ir.scalars_written(s)
    declared = {s.name for s in ir.statements(loop) if isinstance(s, ir.Decl)}
    variant = ir.scalars_written(loop) | {loop.var}
    out: dict[str, ir.Scalar] = {}
    for name, ty in written_top.items():
        if not ty.is_int or name in nested or name in declared:
            continue
        tops = [s for s in loop.body if isinstance(s, ir.Assign) and isinstance(s.target, ir.Var)
                and s.target.name == name]
        incs = [_step(s, name) for s in tops]
        if all(inc is not None and not (_names(inc) & variant) for inc in incs):
            out[name] = ty
    return out


def _step(s: ir.Stmt, name: str) -> ir.Expr | None:
    """``c`` for ``name = name + c`` (``-c`` for ``name - c``), ``c`` not reading ``name``; else None."""
    if not isinstance(s, ir.Assign) or not isinstance(s.target, ir.Var) or s.target.name != name:
        return None
    v = s.value
    if not isinstance(v, ir.Binary) or v.op not in ("+", "-") or v.ty != s.target.ty:
        return None
    if v.lhs == s.target and name not in _names(v.rhs):
        return v.rhs if v.op == "+" else ir.unary("-", v.rhs, loc=s.loc)
    if v.op == "+" and v.rhs == s.target and name not in _names(v.lhs):
        return v.lhs
    return None


def _names(e: ir.Node) -> set[str]:
    return {n.name for n in ir.walk(e) if isinstance(n, ir.Var)} | \
        {n.array for n in ir.walk(e) if isinstance(n, ir.Index)}

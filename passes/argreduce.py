"""Argmax and argmin: a loop keeping the best value and its index becomes two reductions.

``if (a[i] > m) { m = a[i]; k = i; }`` keeps the largest element and the index of its first occurrence
(a strict comparison never moves ``k`` to a later tie; ``>=`` moves it to the last one).  Both are
reductions over the iterations, but of a pair, with a tie rule; this pass writes them as two plain
reductions that :mod:`passes.reduce_gpu` already launches:

* ``r = fmax(r, e)`` from ``r = -inf`` (``fmin`` from ``+inf`` for a minimum): the best element;
* ``q = fmin(q, e == r ? f64(i) : +inf)`` (``fmax`` from ``-inf`` for the last tie): the first
  (last) iteration where it occurs, in time order (a downward loop's first iteration has the largest
  ``i``);
* then C's final state: ``if (r > m && q < +inf) { k = q; m = e at i = k; }`` (``>=`` for a non-strict
  comparison).

Why it equals C, NaN included: C's ``e > m`` is false for a NaN ``e`` and ``fmax`` skips a NaN
operand, so both ignore NaN elements; a NaN ``m`` at entry fails every comparison in C and fails
``r > m`` here, so ``m`` and ``k`` keep their values.  With a strict comparison C moves ``k`` exactly
at each new maximum, so it ends at the first iteration reaching the overall maximum ``r`` if ``r``
beats the entry value, and stays otherwise; ``>=`` ends at the last iteration equal to ``r`` if ``r``
is at least the entry value.  ``m`` is read back from the element at ``k`` (not ``r``), so even the
sign of a zero is C's.  Indices travel as ``f64``, exact for every index of 32 bits or fewer; float
min and max are exact in any association, so neither reduction needs ``reassociate``.

Matched: a loop whose body is exactly ``if (e OP m) { m = e; k = i; }`` (either order inside; ``OP``
one of ``> >= < <=``, either side), ``m`` a float scalar, ``k`` an integer scalar, ``i`` the loop
variable (of at most 32 bits), ``e`` of ``m``'s type reading neither ``m`` nor ``k``.

**Precondition**: valid IR without ``Launch`` regions.

**Postcondition**: valid IR computing the same values.

Before::

    for i in 1..n {
      if (a[i] > m) {
        m = a[i];
        k = i;
      }
    }

After::

    f32 m_best = -inf;
    for i in 1..n {
      m_best = fmaxf(m_best, a[i]);
    }
    f64 k_at = inf;
    for i in 1..n {
      k_at = fmin(k_at, a[i] == m_best ? f64(i) : inf);
    }
    if (m_best > m && k_at < inf) {
      k = i32(k_at);
      m = a[i32(k_at)];
    }
"""

from __future__ import annotations

import dataclasses
import math

from passes.builders import fresh_name
from transpile import ir

_FLIP = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its argmax/argmin loops as two reductions (the same object if there is none)."""
    if ir.is_mapped(kernel):
        return kernel
    if not any(isinstance(n, ir.For) and _match(n) for n in ir.statements(kernel)):
        return kernel
    r = _Rewrite(ir.identifiers(kernel))
    return dataclasses.replace(kernel, body=r.block(kernel.body))


class _Rewrite:
    def __init__(self, used: set[str]) -> None:
        self.used = used

    def block(self, stmts: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        out: list[ir.Stmt] = []
        for s in stmts:
            if isinstance(s, ir.For):
                found = _match(s)
                if found is not None:
                    out.extend(self.split(s, *found))
                    continue
                s = dataclasses.replace(s, body=self.block(s.body))
            elif isinstance(s, ir.If):
                s = dataclasses.replace(s, then=self.block(s.then), orelse=self.block(s.orelse))
            out.append(s)
        return tuple(out)

    def fresh(self, base: str) -> str:
        name = fresh_name(base, self.used)
        self.used.add(name)
        return name

    def split(self, loop: ir.For, op: str, m: ir.Var, k: ir.Var, e: ir.Expr, kv: ir.Expr) -> list[ir.Stmt]:
        loc, ty = loop.loc, m.ty
        best = "max" if op in (">", ">=") else "min"
        first = op in (">", "<")  # strict: the first iteration reaching the best value
        smallest = first == (loop.step > 0)  # the first iteration has the smallest i going upward
        f = "f" if ty == ir.F32 else ""
        r = ir.Var(self.fresh(f"{m.name}_best"), ty, loc=loc)
        q = ir.Var(self.fresh(f"{k.name}_at"), ir.F64, loc=loc)
        i = ir.Var(loop.var, loop.ty, loc=loc)
        inf_r = ir.const(-math.inf if best == "max" else math.inf, ty, loc=loc)
        none = math.inf if smallest else -math.inf
        none_q = ir.const(none, ir.F64, loc=loc)
        reduce_r = ir.Assign(r, ir.Call(f"f{best}{f}", (r, e), ty, loc=loc), loc=loc)
        hit = ir.select(ir.binary("==", e, r, loc=loc), ir.cast(i, ir.F64), none_q, loc=loc)
        reduce_q = ir.Assign(q, ir.Call("fmin" if smallest else "fmax", (q, hit), ir.F64, loc=loc), loc=loc)
        at = ir.cast(q, loop.ty)
        found = ir.binary("<" if smallest else ">", q, none_q, loc=loc)
        beats = ir.binary(op, r, m, loc=loc)
        final = (ir.Assign(k, ir.cast(ir.substitute(kv, {loop.var: at}), k.ty), loc=loc),
                 ir.Assign(m, ir.substitute(e, {loop.var: at}), loc=loc))
        return [ir.Decl(r.name, ty, inf_r, loc=loc), dataclasses.replace(loop, body=(reduce_r,)),
                ir.Decl(q.name, ir.F64, none_q, loc=loc), dataclasses.replace(loop, body=(reduce_q,)),
                ir.If(ir.binary("&&", beats, found, loc=loc), final, (), loc=loc)]


def _match(loop: ir.For) -> tuple[str, ir.Var, ir.Var, ir.Expr, ir.Expr] | None:
    """``(op, m, k, e, kv)`` for a loop ``if (e op m) { m = e; k = kv; }``, ``kv`` the loop variable."""
    if len(loop.body) != 1 or loop.ty.bits > 32:
        return None
    s = loop.body[0]
    if not (isinstance(s, ir.If) and not s.orelse and len(s.then) == 2
            and all(isinstance(a, ir.Assign) and isinstance(a.target, ir.Var) for a in s.then)):
        return None
    c = s.cond
    if not (isinstance(c, ir.Binary) and c.op in _FLIP):
        return None
    for am, ak in (s.then, s.then[::-1]):
        assert isinstance(am, ir.Assign) and isinstance(ak, ir.Assign)
        m, k = am.target, ak.target
        assert isinstance(m, ir.Var) and isinstance(k, ir.Var)
        e = am.value
        if not (m.ty.is_float and k.ty.is_int and e.ty == m.ty and m.name != k.name):
            continue
        kv = ak.value
        if not (kv == ir.cast(ir.Var(loop.var, loop.ty), k.ty)):
            continue
        if c.lhs == e and c.rhs == m:
            op = c.op
        elif c.rhs == e and c.lhs == m:
            op = _FLIP[c.op]
        else:
            continue
        if any(isinstance(n, ir.Var) and n.name in (m.name, k.name) for n in ir.walk(e)):
            continue
        return op, m, k, e, kv
    return None

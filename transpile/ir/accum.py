"""Accumulation statements ``x = x op e``: their parts, identities and combinations.

Shared by reduction recognition (:mod:`passes.reductions`), the reduction
marks' checker (:mod:`transpile.ir.check`), the shuffled interpreter
(:mod:`transpile.ir.interp`) and the CUDA emitter (:mod:`transpile.cuda`), so all
of them agree on what a reduction loop's body means.

A statement accumulates into ``x`` (a scalar ``Var`` or an element ``A[f]``)
when its value is ``x + e``, ``e + x``, ``x - e``, ``x * e``, ``e * x`` or
``fmin/fmax[f](x, e)`` (either argument order) with the operator at the top
and of ``x``'s type, or, for an integer ``x``, a maximum or minimum written as a
conditional, ``x >= e ? x : e`` (any of ``> >= < <=``, either operand order, either
branch order; where ``x == e`` both branches are the same value, so every spelling
is exactly ``max``/``min``, as no integer is NaN).  Its *combining operator* is ``+`` (for ``+`` and ``-``:
``x - e1 - e2 == x - (e1 + e2)``), ``*``, ``min`` or ``max``.  A loop of such
statements computes ``x = x op' (e_1 cop e_2 cop ... )`` where ``op'`` is the
statement's own operator: :func:`apply` builds that final statement.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from transpile import ir

#: Combining operators.
OPS = ("+", "*", "min", "max")
_MINMAX = {"fmin": "min", "fminf": "min", "fmax": "max", "fmaxf": "max"}


# Accumulation(stmt, target, op, term, fn): stmt is ``target = target op e``
# (op the combining operator, term the ``e``); fn is the C function of a
# min/max (``fmin``, ``fmaxf``, ...), else None.
@dataclass(frozen=True, slots=True)
class Accumulation:
    """The parts of an accumulation statement."""

    stmt: ir.Assign
    target: ir.LValue
    op: str
    term: ir.Expr
    fn: str | None = None

    @property
    def name(self) -> str:
        """The accumulator's variable or array."""
        t = self.target
        return t.name if isinstance(t, ir.Var) else t.array


def accumulation(s: ir.Stmt) -> Accumulation | None:
    """``s``'s parts if it has the form ``x = x op e`` (``e`` may read anything), else None."""
    if not isinstance(s, ir.Assign):
        return None
    t, v = s.target, s.value
    if isinstance(v, ir.Binary) and v.op in ("+", "*", "-") and v.ty == t.ty:
        if v.lhs == t:
            return Accumulation(s, t, "+" if v.op == "-" else v.op, v.rhs)
        if v.rhs == t and v.op != "-":
            return Accumulation(s, t, v.op, v.lhs)
        return None
    if isinstance(v, ir.Call) and v.fn in _MINMAX and len(v.args) == 2 and v.ty == t.ty and t in v.args:
        term = v.args[1] if v.args[0] == t else v.args[0]
        return Accumulation(s, t, _MINMAX[v.fn], term, v.fn)
    if isinstance(v, ir.Select) and t.ty.is_int and v.ty == t.ty:
        return _select(s, t, v)
    return None


#: For a comparison that holds, which operand is the larger: 0 the left, 1 the right.
_LARGER = {">": 0, ">=": 0, "<": 1, "<=": 1}


def _select(s: ir.Assign, t: ir.LValue, v: ir.Select) -> Accumulation | None:
    """``x = c ? p : q`` as an integer maximum or minimum (module docstring), or None."""
    c = v.cond
    if not (isinstance(c, ir.Binary) and c.op in _LARGER and c.lhs.ty == c.rhs.ty == t.ty):
        return None
    sides = (c.lhs, c.rhs)
    if sides.count(t) != 1:
        return None
    term = sides[1] if sides[0] == t else sides[0]
    if {v.then, v.orelse} != {t, term} or v.then == v.orelse:
        return None
    larger = sides[_LARGER[c.op]]  # what the condition, when it holds, says is the larger
    return Accumulation(s, t, "max" if v.then == larger else "min", term)


def apply(a: Accumulation, total: ir.Expr) -> ir.Assign:
    """The statement ``a.stmt`` with its term replaced by ``total``: ``x = x op total``."""
    v = a.stmt.value
    if isinstance(v, ir.Binary):
        if v.lhs == a.target:
            v = dataclasses.replace(v, rhs=total)
        else:
            v = dataclasses.replace(v, lhs=total)
    elif isinstance(v, ir.Select):
        def swap(e: ir.Expr) -> ir.Expr:
            return total if e == a.term else e

        cond = v.cond
        assert isinstance(cond, ir.Binary), f"not an accumulation: {a.stmt!r}"
        v = dataclasses.replace(v, cond=dataclasses.replace(cond, lhs=swap(cond.lhs), rhs=swap(cond.rhs)),
                                then=swap(v.then), orelse=swap(v.orelse))
    else:
        assert isinstance(v, ir.Call), f"not an accumulation: {a.stmt!r}"
        v = dataclasses.replace(v, args=(v.args[0], total) if v.args[0] == a.target else (total, v.args[1]))
    return dataclasses.replace(a.stmt, value=v)


def combine(a: Accumulation, op: str, lhs: ir.Expr, rhs: ir.Expr) -> ir.Expr:
    """``lhs op rhs`` in the accumulator's type (``op``: a combining operator)."""
    ty = a.target.ty
    if op in ("+", "*"):
        return ir.Binary(op, lhs, rhs, ty)
    if ty.is_int:  # no integer min/max function in C: the conditional
        return ir.Select(ir.Binary(">=" if op == "max" else "<=", lhs, rhs, ir.I32), lhs, rhs, ty)
    fn = a.fn if a.fn is not None and _MINMAX[a.fn] == op else _minmax_fn(op, ty)
    return ir.Call(fn, (lhs, rhs), ty)


def _minmax_fn(op: str, ty: ir.Scalar) -> str:
    assert ty.is_float, f"{op} reduction of {ty}"
    return ("fmin" if op == "min" else "fmax") + ("f" if ty == ir.F32 else "")


def identity(op: str, ty: ir.Scalar) -> int | float:
    """The neutral value of ``op`` on ``ty``: 0, 1, +inf / -inf (floats), the integer limits."""
    if op == "+":
        return 0.0 if ty.is_float else 0
    if op == "*":
        return 1.0 if ty.is_float else 1
    if ty.is_float:
        return math.inf if op == "min" else -math.inf
    lo, hi = (-(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1) if ty.is_signed else (0, (1 << ty.bits) - 1)
    return hi if op == "min" else lo


def exact(op: str, ty: ir.Scalar) -> bool:
    """Whether reassociating ``op`` on ``ty`` gives bit-identical results (integers; float min/max)."""
    return ty.is_int or op in ("min", "max")

"""Hypothesis strategies for random *valid* IR: :func:`kernels`, :func:`funcs`, :func:`modules`.

Every expression is built with the ir.py builders, so typing is C-exact, and
array intents are those :func:`ir.array_uses` implies.  The generated code is
also safe to run in the interpreter whenever every size parameter is >= 1:

* Array extents are ``size + c`` (``c`` in 0..2), or ``a * b`` for flat pointer
  parameters; every index is a loop variable whose loop runs inside that extent
  (plus a small offset the range allows), a constant ``<= c``, a clamp
  ``e < 0 ? 0 : e < ext ? e : ext - 1``, or ``i * b + j`` for flat arrays.
* Integer ``/`` and ``%`` divide by ``(e % 7) + 8`` or a constant in 1..9;
  shift amounts are ``e & 15`` or a constant in 0..15.
* No float->int conversion (implicit or explicit) ever happens.
* A local is read only after a declaration with initialiser or an
  unconditional assignment in the same or an enclosing block; a local array
  ``Z`` (``ir.Alloc``) is filled by a loop nest before anything else uses it.
* Size parameters are never assigned, so loop bounds and extents are stable;
  helper funcs end with a ``return``.

Kernels stay small: at most 3 nested loops/ifs and about a dozen statements.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from transpile import ir

SIZE_NAMES = ("n", "m", "p")
ELEM_TYPES = (ir.F64, ir.F32, ir.I32, ir.I64, ir.U32, ir.U8)
LOCAL_TYPES = (ir.F64, ir.F32, ir.I32, ir.I64, ir.U32)
SCALAR_TYPES = (ir.F64, ir.F32, ir.I32, ir.I64)
INT_CAST_TYPES = (ir.I8, ir.I16, ir.I32, ir.I64, ir.U8, ir.U16, ir.U32, ir.U64)
MAX_DEPTH = 3  # nested For/If levels
_FLOAT_MATH = tuple(n for n, (ps, r) in ir.MATH_FUNCS.items() if r.is_float)
_INT_MATH = tuple(n for n, (ps, r) in ir.MATH_FUNCS.items() if r.is_int)


@dataclass(frozen=True)
class _Range:
    """What a loop variable ranges over: ``lo <= v < size + hi_off`` (size None: unrelated)."""

    size: str | None
    lo: int = 0
    hi_off: int = 0


@dataclass(frozen=True)
class _Array:
    """An array parameter: extents ``size + c`` per dimension, or ``a * b`` when ``flat``."""

    name: str
    elem: ir.Scalar
    dims: tuple[tuple[str, int], ...]
    flat: tuple[str, str] | None = None


@dataclass
class _Scope:
    """What a block may use: readable scalars, assignable scalars, loop ranges."""

    readable: dict[str, ir.Scalar] = field(default_factory=dict)
    writable: dict[str, ir.Scalar] = field(default_factory=dict)
    loops: dict[str, tuple[ir.Scalar, _Range]] = field(default_factory=dict)
    depth: int = 0
    loop_depth: int = 0

    def child(self) -> _Scope:
        return _Scope(dict(self.readable), dict(self.writable), dict(self.loops), self.depth + 1,
                      self.loop_depth)


def _var(name: str, ty: ir.Scalar = ir.I32) -> ir.Var:
    return ir.Var(name, ty)


class _Gen:
    """Draws statements and expressions for one kernel or func."""

    def __init__(self, draw: Any, sizes: tuple[str, ...], arrays: tuple[_Array, ...],
                 funcs: tuple[ir.Func, ...], *, in_func: bool, budget: int) -> None:
        self.draw = draw
        self.sizes = sizes
        self.arrays = arrays
        self.funcs = tuple(f for f in funcs if f.ret is not None)
        self.in_func = in_func
        self.ret: ir.Scalar | None = None
        self.budget = budget
        self.names = itertools.count()

    def pick(self, options: tuple[Any, ...] | list[Any]) -> Any:
        return self.draw(st.sampled_from(tuple(options)))

    def chance(self, n: int, out_of: int) -> bool:
        return self.draw(st.integers(0, out_of - 1)) < n

    # --- expressions.  kind "int": an integer expression; "num": any type.

    def expr(self, sc: _Scope, kind: str, depth: int = 2) -> ir.Expr:
        if depth <= 0 or self.chance(1, 3):
            return self.leaf(sc, kind, depth)
        choices = ["unary", "arith", "div", "compare", "logical", "select", "cast", "math"]
        if kind == "int":
            choices += ["bitwise", "shift"]
        if any(kind == "num" or f.ret.is_int for f in self.funcs):  # type: ignore[union-attr]
            choices.append("helper")
        what = self.pick(choices)
        sub = depth - 1
        if what == "unary":
            ops = ("-", "~", "!") if kind == "int" else ("-", "!")
            op = self.pick(ops)
            return ir.unary(op, self.expr(sc, "int" if op == "~" else kind, sub))
        if what == "arith":
            return ir.binary(self.pick(("+", "-", "*")), self.expr(sc, kind, sub), self.expr(sc, kind, sub))
        if what == "div":
            lhs, rhs = self.expr(sc, kind, sub), self.expr(sc, kind, sub)
            if ir.common_type(lhs.ty, rhs.ty).is_int:
                return ir.binary(self.pick(("/", "%")), lhs, self.divisor(sc, rhs))
            return ir.binary("/", lhs, rhs)
        if what == "bitwise":
            return ir.binary(self.pick(ir.BITWISE_OPS), self.expr(sc, "int", sub), self.expr(sc, "int", sub))
        if what == "shift":
            return ir.binary(self.pick(ir.SHIFT_OPS), self.expr(sc, "int", sub), self.shift_amount(sc, sub))
        if what == "compare":
            return ir.binary(self.pick(ir.COMPARE_OPS), self.expr(sc, "num", sub), self.expr(sc, "num", sub))
        if what == "logical":
            return ir.binary(self.pick(ir.LOGICAL_OPS), self.expr(sc, "num", sub), self.expr(sc, "num", sub))
        if what == "select":
            return ir.select(self.cond(sc, sub), self.expr(sc, kind, sub), self.expr(sc, kind, sub))
        if what == "cast":
            ty = self.pick(INT_CAST_TYPES if kind == "int" else INT_CAST_TYPES + (ir.F32, ir.F64) * 3)
            return ir.cast(self.expr(sc, "int" if ty.is_int else "num", sub), ty)
        if what == "math":
            fn = self.pick(_INT_MATH if kind == "int" else _FLOAT_MATH)
            params, ret = ir.MATH_FUNCS[fn]
            args = tuple(self.expr(sc, "int" if p.is_int else "num", sub) for p in params)
            return ir.call(fn, args, params, ret)
        assert what == "helper", what
        f = self.pick([f for f in self.funcs if kind == "num" or f.ret.is_int])  # type: ignore[union-attr]
        ptys = tuple(p.ty for p in f.params)
        args = tuple(self.expr(sc, "int" if t.is_int else "num", sub) for t in ptys)
        return ir.call(f.name, args, ptys, f.ret)

    def cond(self, sc: _Scope, depth: int) -> ir.Expr:
        if self.chance(3, 4):
            return ir.binary(self.pick(ir.COMPARE_OPS), self.expr(sc, "num", depth), self.expr(sc, "num", depth))
        return self.expr(sc, "num", depth)

    def divisor(self, sc: _Scope, e: ir.Expr) -> ir.Expr:
        if not e.ty.is_int or self.chance(1, 3):
            return ir.const(self.draw(st.integers(1, 9)), self.pick((ir.I32, ir.I32, ir.I64, ir.U32)))
        return ir.binary("+", ir.binary("%", e, ir.const(7, ir.I32)), ir.const(8, ir.I32))

    def shift_amount(self, sc: _Scope, depth: int) -> ir.Expr:
        if self.chance(1, 2):
            return ir.const(self.draw(st.integers(0, 15)), ir.I32)
        return ir.binary("&", self.expr(sc, "int", depth), ir.const(15, ir.I32))

    def leaf(self, sc: _Scope, kind: str, depth: int = 0) -> ir.Expr:
        want_int = kind == "int"
        variables = [(n, t) for n, t in sc.readable.items() if t.is_int or not want_int]
        arrays = [a for a in self.arrays if a.elem.is_int or not want_int]
        choices = ["const", "const"] + ["var"] * (3 if variables else 0) + ["array"] * (3 if arrays else 0)
        what = self.pick(choices)
        if what == "var":
            name, ty = self.pick(variables)
            return ir.Var(name, ty)
        if what == "array":
            return self.element(sc, self.pick(arrays), depth)
        return self.constant(self.pick((ir.I32, ir.I32, ir.I64, ir.U32, ir.U64) if want_int else
                                       (ir.I32, ir.I64, ir.U32, ir.F32, ir.F64, ir.F64)))

    def constant(self, ty: ir.Scalar) -> ir.Const:
        if ty.is_int:
            lo, hi = (-(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1) if ty.is_signed else (0, (1 << ty.bits) - 1)
            v = self.draw(st.one_of(st.integers(-4, 20), st.sampled_from((lo, hi)), st.integers(lo, hi)))
            return ir.const(v, ty)
        anything = st.floats(allow_nan=False, width=32) if ty == ir.F32 else st.floats(allow_nan=False)
        v = self.draw(st.one_of(st.sampled_from((0.0, 1.0, 0.5, -2.5, 1e-3, 100.0)), anything))
        return ir.const(v, ty)

    # --- array elements

    def element(self, sc: _Scope, a: _Array, depth: int = 1) -> ir.Index:
        """An element of ``a``; clamped indices (depth > 0) hold expressions of depth - 1."""
        if a.flat is not None:
            return ir.Index(a.name, (self.flat_index(sc, a.flat, depth),), a.elem)
        return ir.Index(a.name, tuple(self.index(sc, d, depth) for d in a.dims), a.elem)

    def index(self, sc: _Scope, dim: tuple[str, int], depth: int) -> ir.Expr:
        size, c = dim
        options: list[ir.Expr] = []
        for name, (ty, r) in sc.loops.items():
            if r.size != size:
                continue
            for d in range(-r.lo, c - r.hi_off + 1):
                v = ir.Var(name, ty)
                options.append(v if d == 0 else ir.binary("+" if d > 0 else "-", v, ir.const(abs(d), ir.I32)))
        what = self.pick(["loop"] * (4 if options else 0) + ["const"] + ["clamp"] * (depth > 0))
        if what == "loop":
            return self.pick(options)
        if what == "const":
            return ir.const(self.draw(st.integers(0, c)), ir.I32)
        ext: ir.Expr = _var(size) if c == 0 else ir.binary("+", _var(size), ir.const(c, ir.I32))
        return self.clamp(sc, ext, depth - 1)

    def clamp(self, sc: _Scope, ext: ir.Expr, depth: int) -> ir.Expr:
        e = self.expr(sc, "int", depth)
        zero, one = ir.const(0, ir.I32), ir.const(1, ir.I32)
        inner = ir.select(ir.binary("<", e, ext), e, ir.binary("-", ext, one))
        return ir.select(ir.binary("<", e, zero), zero, inner)

    def flat_index(self, sc: _Scope, flat: tuple[str, str], depth: int) -> ir.Expr:
        a, b = flat
        rows = [(n, t) for n, (t, r) in sc.loops.items() if r.size == a and r.lo >= 0 and r.hi_off <= 0]
        cols = [(n, t) for n, (t, r) in sc.loops.items() if r.size == b and r.lo >= 0 and r.hi_off <= 0]
        what = self.pick(["rowcol"] * (4 if rows and cols else 0) + ["const"] + ["clamp"] * (depth > 0))
        if what == "rowcol":
            (i, ti), (j, tj) = self.pick(rows), self.pick(cols)
            return ir.binary("+", ir.binary("*", ir.Var(i, ti), _var(b)), ir.Var(j, tj))
        if what == "const":
            return ir.const(0, ir.I32)
        return self.clamp(sc, ir.binary("*", _var(a), _var(b)), depth - 1)

    # --- statements

    def block(self, sc: _Scope) -> tuple[ir.Stmt, ...]:
        n = self.draw(st.integers(1, max(1, min(3 - sc.depth // 2, self.budget))))
        return tuple(self.stmt(sc) for _ in range(n))

    def stmt(self, sc: _Scope) -> ir.Stmt:
        self.budget -= 1
        choices = ["decl", "assign"]
        if sc.writable:
            choices += ["set", "set"]
        if self.arrays:
            choices += ["store"] * 3
        if sc.depth < MAX_DEPTH and self.budget > 0:
            choices += ["if", "if"]
            if sc.loop_depth < 3:
                choices += ["for"] * (3 if not self.in_func else 1)
        if self.in_func and sc.depth > 0:
            choices += ["return"]
        what = self.pick(choices)
        if what == "decl" or (what == "assign" and not sc.writable) or (what == "store" and not self.arrays):
            return self.decl(sc)
        if what in ("assign", "set"):
            return self.assign_scalar(sc)
        if what == "store":
            return self.store(sc)
        if what == "for":
            return self.loop(sc)
        if what == "if":
            return self.if_stmt(sc)
        assert self.ret is not None
        return ir.Return(ir.cast(self.expr(sc, "int" if self.ret.is_int else "num"), self.ret))

    def decl(self, sc: _Scope) -> ir.Decl:
        name = f"t{next(self.names)}"
        ty = self.pick(LOCAL_TYPES)
        init = None
        if self.chance(2, 3):
            init = ir.cast(self.expr(sc, "int" if ty.is_int else "num"), ty)
            sc.readable[name] = ty
        sc.writable[name] = ty
        return ir.Decl(name, ty, init)

    def value_for(self, sc: _Scope, target: ir.Var | ir.Index, *, compound: bool) -> ir.Assign:
        ty = target.ty
        kind = "int" if ty.is_int else "num"
        if not compound:
            return ir.assign(target, self.expr(sc, kind))
        op = self.pick(("+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>") if ty.is_int else ("+", "-", "*", "/"))
        if op in ("<<", ">>"):
            return ir.assign(target, self.shift_amount(sc, 1), op)
        e = self.expr(sc, kind)
        if op in ("/", "%") and ty.is_int:
            e = self.divisor(sc, e)
        return ir.assign(target, e, op)

    def assign_scalar(self, sc: _Scope) -> ir.Assign:
        name = self.pick(sorted(sc.writable))
        ty = sc.writable[name]
        s = self.value_for(sc, ir.Var(name, ty), compound=name in sc.readable and self.chance(1, 2))
        sc.readable[name] = ty  # assigned unconditionally in this block from here on
        return s

    def store(self, sc: _Scope) -> ir.Assign:
        a = self.pick(self.arrays)
        return self.value_for(sc, self.element(sc, a), compound=self.chance(1, 3))

    def loop(self, sc: _Scope) -> ir.For:
        var = "ijk"[sc.loop_depth]
        sizes = self.sizes
        outer = [(n, t, r) for n, (t, r) in sc.loops.items() if r.size is not None]
        shapes = ["const"] + ["size"] * (3 if sizes else 0) + ["from1"] * (1 if sizes else 0)
        shapes += ["tri"] * (2 if outer else 0)
        shape = self.pick(shapes)
        lo: ir.Expr
        hi: ir.Expr
        if shape == "size":
            size, h = self.pick(sizes), self.pick((0, 0, 0, 1))
            lo, hi, rng = ir.const(0, ir.I32), _var(size), _Range(size, 0, h)
            if h:
                hi = ir.binary("+", hi, ir.const(h, ir.I32))
        elif shape == "from1":
            size = self.pick(sizes)
            lo, hi, rng = ir.const(1, ir.I32), _var(size), _Range(size, 1, 0)
        elif shape == "tri":
            o, ot, orng = self.pick(outer)
            assert orng.size is not None
            if self.chance(1, 2):  # for j in 0..i
                lo, hi, rng = ir.const(0, ir.I32), ir.Var(o, ot), _Range(orng.size, 0, orng.hi_off - 1)
            else:  # for j in i..n
                lo, hi, rng = ir.Var(o, ot), _var(orng.size), _Range(orng.size, orng.lo, 0)
        else:
            lo, hi, rng = ir.const(0, ir.I32), ir.const(self.draw(st.integers(1, 3)), ir.I32), _Range(None)
        ty = ir.I64 if self.chance(1, 5) else ir.I32
        lo, hi = ir.cast(lo, ty), ir.cast(hi, ty)
        step = self.pick((1, 1, 1, 1, 2, -1, -1, -2))
        inner = sc.child()
        inner.loop_depth += 1
        inner.readable[var] = ty
        inner.loops[var] = (ty, rng)
        return ir.For(var, ty, lo, hi, step, self.block(inner))

    def fill(self, sc: _Scope, a: _Array) -> ir.For:
        """A loop nest assigning every element of ``a`` (extents ``size + c``)."""
        inner = sc.child()
        names = "ijk"[: len(a.dims)]
        for v, (size, c) in zip(names, a.dims):
            inner.readable[v] = ir.I32
            inner.loops[v] = (ir.I32, _Range(size, 0, c))
        target = ir.Index(a.name, tuple(ir.Var(v, ir.I32) for v in names), a.elem)
        stmt: ir.Stmt = ir.assign(target, self.expr(inner, "int" if a.elem.is_int else "num"))
        for v, (size, c) in reversed(list(zip(names, a.dims))):
            hi = _var(size) if c == 0 else ir.binary("+", _var(size), ir.const(c, ir.I32))
            stmt = ir.For(v, ir.I32, ir.const(0, ir.I32), hi, self.pick((1, -1)), (stmt,))
        assert isinstance(stmt, ir.For)
        return stmt

    def if_stmt(self, sc: _Scope) -> ir.If:
        cond = self.cond(sc, 2)
        then = self.block(sc.child())
        orelse: tuple[ir.Stmt, ...] = ()
        r = self.draw(st.integers(0, 3))
        if r == 1:
            orelse = self.block(sc.child())
        elif r == 2 and sc.depth + 1 < MAX_DEPTH:
            orelse = (self.if_stmt(sc.child()),)
        return ir.If(cond, then, orelse)


def _extents(a: _Array) -> tuple[ir.Expr, ...]:
    if a.flat is not None:
        return (ir.binary("*", _var(a.flat[0]), _var(a.flat[1])),)
    return tuple(_var(s) if c == 0 else ir.binary("+", _var(s), ir.const(c, ir.I32)) for s, c in a.dims)


@st.composite
def funcs(draw: Any, name: str = "f0") -> ir.Func:
    """A helper func with 1-3 scalar parameters and a scalar result, ending in ``return``."""
    gen = _Gen(draw, (), (), (), in_func=True, budget=draw(st.integers(1, 5)))
    ret = draw(st.sampled_from(SCALAR_TYPES))
    gen.ret = ret
    params = tuple(ir.Param(f"x{i}", draw(st.sampled_from(SCALAR_TYPES)))
                   for i in range(draw(st.integers(1, 3))))
    sc = _Scope()
    for p in params:
        assert isinstance(p.ty, ir.Scalar)
        sc.readable[p.name] = sc.writable[p.name] = p.ty
    body = gen.block(sc) if draw(st.booleans()) else ()
    last = ir.Return(ir.cast(gen.expr(sc, "int" if ret.is_int else "num"), ret))
    return ir.Func(name, params, ret, body + (last,))


@st.composite
def kernels(draw: Any, helpers: tuple[ir.Func, ...] = (), name: str = "k0") -> ir.Kernel:
    """A kernel over 1-3 size params, 0-2 other scalars and 1-3 arrays; it may call ``helpers``."""
    sizes = SIZE_NAMES[: draw(st.integers(1, 3))]
    scalars = tuple((f"a{i}", draw(st.sampled_from(SCALAR_TYPES))) for i in range(draw(st.integers(0, 2))))
    arrays = []
    for aname in ("A", "B", "C")[: draw(st.integers(1, 3))]:
        elem = draw(st.sampled_from(ELEM_TYPES))
        shape = draw(st.integers(0, 5))
        if shape == 0:  # flat pointer parameter A[n * m], indexed A[i * m + j]
            arrays.append(_Array(aname, elem, (), (draw(st.sampled_from(sizes)), draw(st.sampled_from(sizes)))))
            continue
        rank = draw(st.integers(1, 3))
        shape_ = tuple((draw(st.sampled_from(sizes)), draw(st.sampled_from((0, 0, 1, 2)))) for _ in range(rank))
        arrays.append(_Array(aname, elem, shape_))
    pointers = {a.name for a in arrays if a.flat or (len(a.dims) == 1 and draw(st.booleans()))}
    gen = _Gen(draw, sizes, tuple(arrays), helpers, in_func=False, budget=draw(st.integers(2, 12)))
    sc = _Scope()
    for s in sizes:
        sc.readable[s] = ir.I32
    for n, t in scalars:
        sc.readable[n] = sc.writable[n] = t
    prefix: tuple[ir.Stmt, ...] = ()
    if draw(st.integers(0, 3)) == 0:
        # A local array Z, filled by a loop nest before the rest of the body may use it.
        rank = draw(st.integers(1, 2))
        z = _Array("Z", draw(st.sampled_from(ELEM_TYPES)),
                   tuple((draw(st.sampled_from(sizes)), draw(st.sampled_from((0, 1)))) for _ in range(rank)))
        prefix = (ir.Alloc(z.name, ir.ArrayType(z.elem, _extents(z))), gen.fill(sc, z))
        gen.arrays += (z,)
    body = prefix + gen.block(sc)
    uses = ir.array_uses(body)
    params: list[ir.Param] = [ir.Param(s, ir.I32) for s in sizes] + [ir.Param(n, t) for n, t in scalars]
    for a in arrays:
        intent = ir.intent_of(*uses.get(a.name, (False, False)))
        params.append(ir.Param(a.name, ir.ArrayType(a.elem, _extents(a)), intent, a.name in pointers))
    order = draw(st.permutations(range(len(params)))) if draw(st.integers(0, 4)) == 0 else range(len(params))
    return ir.Kernel(name, tuple(params[i] for i in order), body)


@st.composite
def modules(draw: Any) -> ir.Module:
    """A module of 0-2 helper funcs and 1-2 kernels that may call them."""
    fs = tuple(draw(funcs(f"f{i}")) for i in range(draw(st.integers(0, 2))))
    ks = tuple(draw(kernels(fs, f"k{i}")) for i in range(draw(st.integers(1, 2))))
    return ir.Module(fs, ks)


def size_args(kernel: ir.Kernel, size: int = 2) -> dict[str, int]:
    """Values for a kernel's size parameters (all ``size``), for running it."""
    return {p.name: size for p in kernel.params if p.name in SIZE_NAMES}


__all__ = ["kernels", "funcs", "modules", "size_args", "SIZE_NAMES"]

"""C's view of the IR scalars: their C spellings, C's constant folding, integer literals' types.

Shared by the C front end, the affine forms (:mod:`transpile.ir.affine`) and the passes (messages
that name a C type); it depends on the IR nodes only.
"""

from __future__ import annotations

from collections.abc import Callable

from transpile import ir
from transpile.diagnostics import Loc

# C spelling of each scalar type, for messages ("declare it as double x[n]").
C_NAMES = {"i8": "char", "i16": "short", "i32": "int", "i64": "long", "u8": "unsigned char",
           "u16": "unsigned short", "u32": "unsigned", "u64": "unsigned long", "f32": "float",
           "f64": "double"}


def fold(e: ir.Expr) -> int | float | None:
    """The value of a constant expression under C semantics, else None."""
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Cast):
        v = fold(e.operand)
        return None if v is None else _convert(v, e.ty)
    if isinstance(e, ir.Unary):
        v = fold(e.operand)
        if v is None:
            return None
        if e.op == "!":
            return int(not v)
        if e.op == "~":
            return ir.wrap_int(~int(v), e.ty)
        return _convert(-v, e.ty)
    if isinstance(e, ir.Select):
        c = fold(e.cond)
        if c is None:
            return None
        return fold(e.then if c else e.orelse)
    if isinstance(e, ir.Binary):
        a, b = fold(e.lhs), fold(e.rhs)
        if a is None or b is None:
            return None
        if e.op in _FOLD:
            try:
                r = _FOLD[e.op](a, b, e.lhs.ty)
            except (ZeroDivisionError, ValueError, OverflowError):
                return None
            return None if r is None else _convert(r, e.ty)
    return None


def _convert(v: int | float, ty: ir.Scalar) -> int | float | None:
    if ty.is_float:
        return float(ir.const(v, ty).value)
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return None
        v = int(v)  # truncates toward zero
    return ir.wrap_int(v, ty)


def _div(a: int | float, b: int | float, t: ir.Scalar) -> int | float:
    if t.is_float:
        return a / b
    q = abs(int(a)) // abs(int(b))
    return q if (a >= 0) == (b >= 0) else -q


def _mod(a: int | float, b: int | float, t: ir.Scalar) -> int:
    return int(a) - int(_div(a, b, t)) * int(b)


def _shift(left: bool) -> Callable[[int | float, int | float, ir.Scalar], int | None]:
    def f(a: int | float, b: int | float, t: ir.Scalar) -> int | None:
        if not 0 <= b < t.bits:
            return None
        return int(a) << int(b) if left else int(a) >> int(b)
    return f


_FOLD: dict[str, Callable[[int | float, int | float, ir.Scalar], int | float | None]] = {
    "+": lambda a, b, t: a + b,
    "-": lambda a, b, t: a - b,
    "*": lambda a, b, t: a * b,
    "/": _div,
    "%": _mod,
    "<<": _shift(True),
    ">>": _shift(False),
    "&": lambda a, b, t: int(a) & int(b),
    "|": lambda a, b, t: int(a) | int(b),
    "^": lambda a, b, t: int(a) ^ int(b),
    "<": lambda a, b, t: int(a < b),
    "<=": lambda a, b, t: int(a <= b),
    ">": lambda a, b, t: int(a > b),
    ">=": lambda a, b, t: int(a >= b),
    "==": lambda a, b, t: int(a == b),
    "!=": lambda a, b, t: int(a != b),
    "&&": lambda a, b, t: int(bool(a) and bool(b)),
    "||": lambda a, b, t: int(bool(a) or bool(b)),
}


def const_of(value: int | float, ty: ir.Scalar, loc: Loc | None) -> ir.Expr:
    """``value`` as an expression of type ``ty`` (a Cast around a Const for narrow types)."""
    if ty in (ir.I32, ir.I64, ir.U32, ir.U64, ir.F32, ir.F64):
        return ir.const(value, ty, loc=loc)
    return ir.Cast(ir.const(value, ir.promote(ty), loc=loc), ty, loc=loc)


def int_const(value: int, loc: Loc | None) -> ir.Const:
    """An integer literal as C would type it: i32 if it fits, else i64."""
    return ir.const(value, ir.I32 if -(2**31) <= value <= 2**31 - 1 else ir.I64, loc=loc)

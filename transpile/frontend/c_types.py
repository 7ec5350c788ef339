"""C types, literals and constant folding for the C front end.

pycparser's declarator chains (``TypeDecl``/``ArrayDecl``/``PtrDecl``/
``FuncDecl`` over an ``IdentifierType``) are resolved through the file's
typedefs into the small :data:`CType` algebra below.  Literal spellings get
C's literal types (C11 6.4.4), and :func:`fold` evaluates constant IR
expressions with C semantics.
"""

from __future__ import annotations

from dataclasses import dataclass

from pycparser import c_ast

from transpile import ir
from transpile.diagnostics import Loc, TranspileError
from transpile.ir.cscalars import C_NAMES


@dataclass(frozen=True)
class VoidT:
    """``void``."""


@dataclass(frozen=True)
class ArrT:
    """``elem[dim]``; ``dim`` is the unlowered pycparser expression (None: ``[]``)."""

    elem: CType
    dim: c_ast.Node | None


@dataclass(frozen=True)
class PtrT:
    """``target *``."""

    target: CType


@dataclass(frozen=True)
class FuncT:
    """A function type (only ever rejected where a value is expected)."""


@dataclass(frozen=True)
class OtherT:
    """A type the IR cannot express (struct, union, _Bool, long double...)."""

    what: str


CType = ir.Scalar | VoidT | ArrT | PtrT | FuncT | OtherT

def describe(t: CType) -> str:
    """A short C-like description of ``t`` for diagnostics."""
    if isinstance(t, ir.Scalar):
        return C_NAMES[t.name]
    if isinstance(t, VoidT):
        return "void"
    if isinstance(t, ArrT):
        return describe(t.elem) + "[]"
    if isinstance(t, PtrT):
        return describe(t.target) + " *"
    if isinstance(t, FuncT):
        return "function"
    return t.what


def scalar_of_names(names: list[str]) -> CType:
    """The type named by a list of C type specifiers (``['unsigned', 'long']``)."""
    words = [n for n in names if n not in ("signed", "const", "volatile", "restrict")]
    unsigned = "unsigned" in names
    longs = words.count("long")
    rest = {w for w in words if w not in ("long", "unsigned", "int")}
    if rest == {"void"}:
        return VoidT()
    if rest == {"_Bool"}:
        return OtherT("_Bool")
    if rest & {"_Complex", "_Imaginary", "__int128"}:
        return OtherT(" ".join(names))
    if rest == {"double"}:
        return OtherT("long double") if longs else ir.F64
    if rest == {"float"}:
        return ir.F32
    if rest == {"char"}:
        return ir.U8 if unsigned else ir.I8
    if rest == {"short"}:
        return ir.U16 if unsigned else ir.I16
    if rest:
        return OtherT(" ".join(names))
    if longs:
        return ir.U64 if unsigned else ir.I64
    return ir.U32 if unsigned else ir.I32


class TypeResolver:
    """Resolves pycparser type nodes through the file-scope typedefs."""

    def __init__(self, typedefs: dict[str, c_ast.Node]) -> None:
        self.typedefs = typedefs

    def resolve(self, node: c_ast.Node, _depth: int = 0) -> CType:
        """The :data:`CType` of a declarator or type-name node."""
        if _depth > 64:
            return OtherT("recursive typedef")
        if isinstance(node, (c_ast.TypeDecl, c_ast.Typename)):
            return self.resolve(node.type, _depth + 1)
        if isinstance(node, c_ast.IdentifierType):
            if len(node.names) == 1 and node.names[0] in self.typedefs:
                return self.resolve(self.typedefs[node.names[0]], _depth + 1)
            return scalar_of_names(node.names)
        if isinstance(node, c_ast.ArrayDecl):
            return ArrT(self.resolve(node.type, _depth + 1), node.dim)
        if isinstance(node, c_ast.PtrDecl):
            return PtrT(self.resolve(node.type, _depth + 1))
        if isinstance(node, c_ast.FuncDecl):
            return FuncT()
        if isinstance(node, c_ast.Enum):
            return ir.I32
        if isinstance(node, c_ast.Struct):
            return OtherT(f"struct {node.name or '<anonymous>'}")
        if isinstance(node, c_ast.Union):
            return OtherT(f"union {node.name or '<anonymous>'}")
        return OtherT(type(node).__name__)


def sizeof(t: CType) -> int | None:
    """``sizeof`` in bytes on LP64 (None when not a compile-time constant here)."""
    if isinstance(t, ir.Scalar):
        return t.bits // 8
    if isinstance(t, PtrT):
        return 8
    return None


# ---------------------------------------------------------------------------
# Literals (C11 6.4.4)

_I32_MAX, _U32_MAX, _I64_MAX, _U64_MAX = 2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1


def int_literal(text: str, loc: Loc) -> ir.Const:
    """An integer constant with its C type (suffixes u, l, ll; hex, octal, binary)."""
    body = text.rstrip("uUlL")
    suffix = text[len(body):].lower()
    unsigned = "u" in suffix
    longs = suffix.count("l")
    low = body.lower()
    try:
        if low.startswith("0x"):
            value, decimal = int(low[2:], 16), False
        elif low.startswith("0b"):
            value, decimal = int(low[2:], 2), False
        elif len(low) > 1 and low.startswith("0"):
            value, decimal = int(low, 8), False
        else:
            value, decimal = int(low, 10), True
    except ValueError:
        raise TranspileError(loc, f"invalid integer literal '{text}'") from None
    # Candidate types in order (C11 6.4.4.1p5); long and long long are both i64.
    if unsigned:
        cands = [ir.U64] if longs else [ir.U32, ir.U64]
    elif decimal:
        cands = [ir.I64] if longs else [ir.I32, ir.I64]
    else:
        cands = [ir.I64, ir.U64] if longs else [ir.I32, ir.U32, ir.I64, ir.U64]
    limits = {ir.I32: _I32_MAX, ir.U32: _U32_MAX, ir.I64: _I64_MAX, ir.U64: _U64_MAX}
    for t in cands:
        if value <= limits[t]:
            return ir.Const(value, t, loc=loc)
    raise TranspileError(loc, f"integer literal '{text}' is too large for any integer type")


def float_literal(text: str, loc: Loc) -> ir.Const:
    """A floating constant: ``f`` suffix is float, none is double."""
    body = text.rstrip("fFlL")
    suffix = text[len(body):].lower()
    if suffix == "l":
        raise TranspileError(loc, f"'long double' literal '{text}' is not supported: use double")
    try:
        value = float.fromhex(body) if body.lower().startswith("0x") else float(body)
    except ValueError:
        raise TranspileError(loc, f"invalid floating literal '{text}'") from None
    return ir.const(value, ir.F32 if suffix == "f" else ir.F64, loc=loc)


_ESCAPES = {"n": 10, "t": 9, "r": 13, "0": 0, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92,
            "'": 39, '"': 34, "?": 63, "e": 27}


def char_literal(text: str, loc: Loc) -> ir.Const:
    """A character constant: type int, value of the (signed) char."""
    if not text.startswith("'"):
        raise TranspileError(loc, f"wide character literal {text} is not supported")
    body = text[1:-1]
    if body.startswith("\\"):
        esc = body[1:]
        if esc[:1] == "x":
            try:
                value = int(esc[1:], 16)
            except ValueError:
                value = -1
        elif esc[:1].isdigit():
            try:
                value = int(esc, 8)
            except ValueError:
                value = -1
        else:
            value = _ESCAPES.get(esc, -1)
        if value < 0 or value > 255:
            raise TranspileError(loc, f"character literal {text} is not supported")
    elif len(body) == 1 and ord(body) < 128:
        value = ord(body)
    elif len(body) > 1:
        raise TranspileError(loc, f"multi-character literal {text} is not supported")
    else:
        raise TranspileError(loc, f"character literal {text} is not supported: "
                                  "only single-byte characters are")
    return ir.Const(ir.wrap_int(value, ir.I8), ir.I32, loc=loc)


# ---------------------------------------------------------------------------
# Constant folding

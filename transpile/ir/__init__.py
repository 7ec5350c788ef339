"""The typed loop-nest IR: immutable nodes, visitors, and typed builders.

Design (see docs/ir.md):

* Every node is a frozen, slotted dataclass; child lists are tuples.  Change a
  node with :func:`dataclasses.replace`.
* Every node carries ``loc`` (its source position), excluded from equality, so
  two programs with the same structure compare equal wherever they came from.
* The IR is explicitly typed: every expression has a scalar type ``ty`` and
  C's implicit conversions are explicit :class:`Cast` nodes.  The builders at
  the bottom of this module (:func:`binary`, :func:`unary`, :func:`select`,
  :func:`assign`, :func:`call`) apply C's usual arithmetic conversions, so the
  C front end and the text parser produce identical trees for identical
  programs.
* Loops are normalised: ``For(var, lo, hi, step)`` runs over
  ``{x : lo <= x < hi}``; a positive step counts up from ``lo``, a negative
  step counts down from ``hi - 1``.  Bounds are evaluated once, on entry.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeGuard, TypeVar

from transpile.diagnostics import Loc, TranspileError

# ---------------------------------------------------------------------------
# Types


# Scalar(name): a machine scalar type: i8 i16 i32 i64 u8 u16 u32 u64 f32 f64.
@dataclass(frozen=True, slots=True)
class Scalar:
    """A scalar machine type, named like ``i32`` or ``f64``."""

    name: str

    def __post_init__(self) -> None:
        assert self.name in _SCALAR_NAMES, f"unknown scalar type {self.name!r}"

    @property
    def is_float(self) -> bool:
        return self.name[0] == "f"

    @property
    def is_int(self) -> bool:
        return not self.is_float

    @property
    def is_signed(self) -> bool:
        return self.name[0] in "if"

    @property
    def bits(self) -> int:
        return int(self.name[1:])

    @property
    def rank(self) -> int:
        """Integer conversion rank (C11 6.3.1.1): by width only."""
        return self.bits

    def __str__(self) -> str:
        return self.name


_SCALAR_NAMES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64")
I8, I16, I32, I64 = Scalar("i8"), Scalar("i16"), Scalar("i32"), Scalar("i64")
U8, U16, U32, U64 = Scalar("u8"), Scalar("u16"), Scalar("u32"), Scalar("u64")
F32, F64 = Scalar("f32"), Scalar("f64")
SCALARS: dict[str, Scalar] = {n: Scalar(n) for n in _SCALAR_NAMES}


# ArrayType(elem, dims): a row-major array of ``elem`` with symbolic extents
# ``dims`` (integer expressions over scalar parameters and constants).
@dataclass(frozen=True, slots=True)
class ArrayType:
    """A row-major array type with one extent expression per dimension."""

    elem: Scalar
    dims: tuple[Expr, ...]

    @property
    def rank(self) -> int:
        return len(self.dims)


Type: TypeAlias = Scalar | ArrayType
Intent = Literal["in", "out", "inout"]


# ---------------------------------------------------------------------------
# Nodes


def _loc() -> Any:
    return field(default=None, compare=False, repr=False, kw_only=True)


class Node:
    """Base class of all IR nodes (a marker; nodes are frozen dataclasses)."""

    __slots__ = ()
    loc: Loc | None


# --- Expressions: every expression has a scalar type ``ty``.


# Const(value, ty): an integer or floating literal of type ty.  For f32 the
# value is already rounded to single precision.
@dataclass(frozen=True, slots=True)
class Const(Node):
    """A literal."""

    value: int | float
    ty: Scalar
    loc: Loc | None = _loc()


# Var(name, ty): a scalar variable (parameter, local or loop variable).
@dataclass(frozen=True, slots=True)
class Var(Node):
    """A reference to a scalar variable."""

    name: str
    ty: Scalar
    loc: Loc | None = _loc()


# Index(array, indices, ty): element ``array[i0][i1]...`` of an array
# parameter; ty is the element type.  One index per dimension.
@dataclass(frozen=True, slots=True)
class Index(Node):
    """An array element reference."""

    array: str
    indices: tuple[Expr, ...]
    ty: Scalar
    loc: Loc | None = _loc()


# Unary(op, operand, ty): op in UNARY_OPS ('-', '!', '~').
@dataclass(frozen=True, slots=True)
class Unary(Node):
    """A unary operation."""

    op: str
    operand: Expr
    ty: Scalar
    loc: Loc | None = _loc()


# Binary(op, lhs, rhs, ty): op in BINARY_OPS.  Arithmetic and bitwise ops
# have operands of type ty (shifts: lhs only); comparisons have operands of
# one common type and ty i32; '&&'/'||' short-circuit and have ty i32.
@dataclass(frozen=True, slots=True)
class Binary(Node):
    """A binary operation."""

    op: str
    lhs: Expr
    rhs: Expr
    ty: Scalar
    loc: Loc | None = _loc()


# Select(cond, then, orelse, ty): C's ``cond ? then : orelse``; only the
# chosen branch is evaluated.
@dataclass(frozen=True, slots=True)
class Select(Node):
    """A conditional expression."""

    cond: Expr
    then: Expr
    orelse: Expr
    ty: Scalar
    loc: Loc | None = _loc()


# Cast(operand, ty): conversion to ty with C semantics (float->int truncates).
@dataclass(frozen=True, slots=True)
class Cast(Node):
    """An explicit or (made explicit) implicit conversion."""

    operand: Expr
    ty: Scalar
    loc: Loc | None = _loc()


# Call(fn, args, ty): a math-library function (C name, e.g. ``sqrtf``) or a
# device function of the module.  Arguments already have the parameter types.
@dataclass(frozen=True, slots=True)
class Call(Node):
    """A call to a pure scalar function."""

    fn: str
    args: tuple[Expr, ...]
    ty: Scalar
    loc: Loc | None = _loc()


Expr: TypeAlias = Const | Var | Index | Unary | Binary | Select | Cast | Call
LValue: TypeAlias = Var | Index

# --- Statements.


# Decl(name, ty, init): a local scalar, in scope for the rest of its block.
@dataclass(frozen=True, slots=True)
class Decl(Node):
    """A local scalar declaration, optionally initialised."""

    name: str
    ty: Scalar
    init: Expr | None = None
    loc: Loc | None = _loc()


# Alloc(name, ty): a local array (C's ``double z[n];``), only at the top level
# of a kernel body, extents over scalar parameters; its elements start out
# undefined.  Indexed like an array parameter, invisible to the caller.
@dataclass(frozen=True, slots=True)
class Alloc(Node):
    """A kernel-local scratch array."""

    name: str
    ty: ArrayType
    loc: Loc | None = _loc()


# Assign(target, value): ``target = value``; value has the target's type.
# Compound assignments are ``x = x op e`` (the printer shows them as ``op=``).
@dataclass(frozen=True, slots=True)
class Assign(Node):
    """An assignment to a scalar variable or an array element."""

    target: LValue
    value: Expr
    loc: Loc | None = _loc()


# For(var, ty, lo, hi, step, body, par): runs body for each var in [lo, hi);
# upward from lo when step > 0, downward from hi - 1 when step < 0.  var is
# scoped to the loop and never assigned in body; lo and hi are evaluated once.
# par is None (sequential) or 'x'/'y'/'z': the loop's iterations are spread
# over GPU threads along that grid dimension (only inside a Launch).
# reduce is () or, for a *parallel reduction* loop, one combining operator
# ('+', '*', 'min', 'max') per body statement: the body is exactly those
# accumulations ``x = x op e`` (transpile/ir/accum.py), proven by
# passes/reductions.py, so the iterations may run in any order and the terms
# combine in any association (docs/parallelism.md, "Reductions").
@dataclass(frozen=True, slots=True)
class For(Node):
    """A normalised counted loop."""

    var: str
    ty: Scalar
    lo: Expr
    hi: Expr
    step: int
    body: tuple[Stmt, ...]
    par: str | None = None
    reduce: tuple[str, ...] = ()
    # A grid ``par`` loop whose iterations update these arrays only by ``A[f] += e`` / ``A[f] -= e``
    # (a histogram's scatter): the updates are atomic, the only dependence the loop carries
    # (passes/map_gpu.py proves it; ircheck proves it again).
    atomic: tuple[str, ...] = ()
    # A host loop's schedule (passes/launch_forms.py): ``oneblock``, one block of threads may run the
    # whole loop, its launches separated by barriers, when the sizes allow (decided at run time).
    host: tuple[str, ...] = ()
    loc: Loc | None = _loc()


#: The marks a host loop's ``host`` may hold.
HOST_SCHEDULES = ("oneblock",)


def grid_par(s: Stmt | None) -> TypeGuard[For]:
    """``s`` is a loop spread over the grid (``par(x|y|z)``); a ``par(lane)`` loop is spread over the
    threads of a row program's row, inside its launch's grid loop."""
    return isinstance(s, For) and s.par is not None and s.par != "lane"


# If(cond, then, orelse): a two-way branch; orelse may be empty.
@dataclass(frozen=True, slots=True)
class If(Node):
    """A conditional statement."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()
    loc: Loc | None = _loc()


# Return(value): leaves a device function (value is None for void).
@dataclass(frozen=True, slots=True)
class Return(Node):
    """Return from a device function."""

    value: Expr | None = None
    loc: Loc | None = _loc()


# Trap(message): stops the kernel with a run-time error (the drop-in writes the
# function's name, loc and message to stderr and aborts; the interpreter
# raises): what C leaves undefined or never finishes, e.g. a run-time loop
# step of 0 (transpile/frontend/loops.py).  Only in kernels, in host code: at
# the top level or in the branches of top-level ``If`` statements; what the
# kernel wrote before it is unspecified.
@dataclass(frozen=True, slots=True)
class Trap(Node):
    """A run-time error: the function stops."""

    message: str
    loc: Loc | None = _loc()


# LaunchForm: how a launch's iterations are laid out on the GPU, decided before any CUDA is
# printed (passes/launch_forms.py) and read by the back end, its cost model and fusion; the text
# form writes it as ``launch[rows] { ... }``.  docs/parallelism.md describes each form.
class LaunchForm(enum.Enum):
    """A launch's form: the value is its name in the text form."""

    SERIAL = "serial"  # no grid par loops: one thread runs the body
    PLAIN = "plain"  # one thread per iteration of the par loops (grid-stride loops)
    TILED = "tiled"  # a matmul-like nest: block tiles in shared memory (tensor cores where the target has them)
    BLOCK = "block"  # one reduction (with thread 0's statements around it): one block
    GRID = "grid"  # one reduction outside host loops: partial sums over the whole GPU, then a fold
    ROWS = "rows"  # a par(x) loop whose body holds reductions: a warp per row
    ROWPROG = "rowprog"  # row programs: a warp or a block a row, every scalar the same in all its lanes
    COLS = "cols"  # column reductions: column tiles
    SWEEP = "sweep"  # row and column reductions in one pass over a matrix, then a fold
    CHAIN = "chain"  # a row's reductions, then its column terms, then a fold


# Launch(body, form): a top-level region executed on the GPU as one kernel launch.
# Its leading loops tagged with ``par`` are spread over the grid; everything
# else in it runs once per thread of that grid (once in all, if none).
# ``form``: its LaunchForm once passes/launch_forms.py has run, else None.
@dataclass(frozen=True, slots=True)
class Launch(Node):
    """A GPU kernel launch region (produced by the mapping pass)."""

    body: tuple[Stmt, ...]
    form: LaunchForm | None = None
    loc: Loc | None = _loc()


Stmt: TypeAlias = Decl | Alloc | Assign | For | If | Return | Trap | Launch

# --- Functions.


# Param(name, ty, intent, pointer): a parameter.  Arrays carry intent (in:
# only read, out: only written, inout: both); ``pointer`` records that the C
# source declared it ``T *p`` (flat, extent derived from its index range).
# ``ctype``: the C type as written (transpile/frontend/header.py), for the drop-in's
# signature; not part of the IR's meaning (not compared, not in the text form).
@dataclass(frozen=True, slots=True)
class Param(Node):
    """A function parameter."""

    name: str
    ty: Type
    intent: Intent = "in"
    pointer: bool = False
    loc: Loc | None = _loc()
    ctype: str | None = field(default=None, compare=False, repr=False, kw_only=True)


# Func(name, params, ret, body): a scalar device function callable from
# kernels (parameters are scalars; ret None means void).
@dataclass(frozen=True, slots=True)
class Func(Node):
    """A helper function, emitted as ``__host__ __device__``."""

    name: str
    params: tuple[Param, ...]
    ret: Scalar | None
    body: tuple[Stmt, ...]
    loc: Loc | None = _loc()


# Kernel(name, params, body, ret): an offloaded function; the host stub keeps the
# C signature.  ``ret`` is None for a void C function; for one returning a
# scalar it names the *return slot*: the last parameter, an ``out`` array of
# that scalar type and extent [1], which the body's final statement assigns
# (``result[0] = s``).  Passes treat the slot as any output array; the drop-in
# leaves it out of its parameters and returns its element.
@dataclass(frozen=True, slots=True)
class Kernel(Node):
    """A function to offload to the GPU."""

    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    loc: Loc | None = _loc()
    ret: str | None = None

    @property
    def ret_param(self) -> Param | None:
        """The return slot's parameter, or None for a void kernel."""
        return self.param(self.ret) if self.ret is not None else None

    @property
    def c_params(self) -> tuple[Param, ...]:
        """The C function's parameters: all but the return slot."""
        return tuple(p for p in self.params if p.name != self.ret)

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, if any."""
        for p in self.params:
            if p.name == name:
                return p
        return None


# Module(funcs, kernels): a translation unit.
@dataclass(frozen=True, slots=True)
class Module(Node):
    """A translation unit: helper functions and kernels."""

    funcs: tuple[Func, ...]
    kernels: tuple[Kernel, ...]
    loc: Loc | None = _loc()

    def func(self, name: str) -> Func | None:
        """The helper function called ``name``, if any."""
        for f in self.funcs:
            if f.name == name:
                return f
        return None


# ---------------------------------------------------------------------------
# Traversal


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
"""Per node class, the fields that may hold child nodes (every field but ``loc`` and the plain-data
ones): looked up once, since ``dataclasses.fields`` on every visit cost a third of a walk."""

_PLAIN = frozenset({"str", "int", "bool", "float", "int | float", "Intent", "str | None", "int | None", "Scalar",
                    "Scalar | None", "tuple[str, ...]"})


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        names = _CHILD_FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
                                           if f.name != "loc" and str(f.type) not in _PLAIN)
    return names


def _collect(value: object, out: list[Node]) -> None:
    if isinstance(value, Node):
        out.append(value)
    elif isinstance(value, tuple):
        for v in value:
            _collect(v, out)
    elif isinstance(value, ArrayType):
        out.extend(value.dims)


def child_list(node: Node) -> list[Node]:
    """The direct child nodes of ``node`` (types' extent expressions included), in field order."""
    out: list[Node] = []
    for name in _child_fields(type(node)):
        _collect(getattr(node, name), out)
    return out


def children(node: Node) -> Iterator[Node]:
    """The direct child nodes of ``node`` (types' extent expressions included)."""
    return iter(child_list(node))


def walk(node: Node) -> Iterator[Node]:
    """All nodes under ``node`` (itself included), in pre-order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        kids = child_list(n)
        kids.reverse()
        stack.extend(kids)


_STMTS = (Decl, Alloc, Assign, For, If, Return, Trap, Launch)


def statements(node: Node) -> Iterator[Stmt]:
    """The statements under ``node`` (itself included if it is one), in the order :func:`walk` visits
    them; expressions, which hold no statements, are not entered (most of a tree's nodes)."""
    stack: list[Node] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, _STMTS):
            yield n
        if isinstance(n, (For, Launch, Kernel, Func)):
            kids: list[Node] = list(n.body)
        elif isinstance(n, If):
            kids = [*n.then, *n.orelse]
        elif isinstance(n, Module):
            kids = [*n.funcs, *n.kernels]
        else:
            continue
        kids.reverse()
        stack.extend(kids)


def has_launch(node: Node) -> bool:
    """Whether a ``Launch`` is under ``node`` (itself included): a host loop that launches, a mapped kernel."""
    return any(isinstance(n, Launch) for n in statements(node))


def is_mapped(kernel: Kernel) -> bool:
    """Whether ``kernel`` is mapped to the GPU (``passes.map_gpu`` made its launches): the passes before
    the mapping leave a mapped kernel as it is, the back end takes only mapped kernels."""
    return has_launch(kernel)


def substitute(node: N, table: Mapping[str, Expr]) -> N:
    """``node`` with every variable named in ``table`` replaced by its entry, all at once (an entry's own
    variables are not replaced again); loop variables and declarations keep their names.  The one
    variable substitution of the project: passes, back end and cost model call it."""
    return _Substitute(table).transform(node)  # type: ignore[return-value]


def scalars_written(node: Node) -> set[str]:
    """Names of the scalar variables assigned under ``node`` (an initialised Decl writes its name)."""
    out: set[str] = set()
    for n in statements(node):
        if isinstance(n, Assign) and isinstance(n.target, Var):
            out.add(n.target.name)
        elif isinstance(n, Decl) and n.init is not None:
            out.add(n.name)
    return out


def outer_scalars_written(node: Node) -> dict[str, Scalar]:
    """The scalars assigned under ``node`` that it does not declare, with their types, in the order
    first assigned: what running ``node`` changes outside it (no scalar is declared twice, ircheck)."""
    local = {n.name for n in statements(node) if isinstance(n, Decl)}
    out: dict[str, Scalar] = {}
    for n in statements(node):
        if isinstance(n, Assign) and isinstance(n.target, Var) and n.target.name not in local:
            out.setdefault(n.target.name, n.target.ty)
    return out


def var_names(node: Node) -> set[str]:
    """The names of the scalar variables ``node`` reads (its ``Var`` nodes)."""
    return {n.name for n in walk(node) if isinstance(n, Var)}


def identifiers(node: Node) -> set[str]:
    """Every name declared or used under ``node``: variables, parameters, locals, loop variables, arrays."""
    out: set[str] = set()
    for n in walk(node):
        if isinstance(n, (Var, Decl, Param, Alloc)):
            out.add(n.name)
        elif isinstance(n, For):
            out.add(n.var)
        elif isinstance(n, Index):
            out.add(n.array)
    return out


class Visitor:
    """Dispatches ``visit(node)`` to ``visit_<ClassName>``, else ``generic_visit``."""

    def visit(self, node: Node) -> Any:
        method = getattr(self, "visit_" + type(node).__name__, self.generic_visit)
        return method(node)

    def generic_visit(self, node: Node) -> Any:
        for child in children(node):
            self.visit(child)
        return None


class Transformer:
    """Rebuilds a tree bottom-up; a node is rebuilt only if a child changed.

    Override ``visit_<ClassName>(node)`` to return a replacement; call
    ``self.generic_visit(node)`` inside it to transform the children first.
    When nothing changes, ``transform(k) is k``.
    """

    def transform(self, node: Node) -> Any:
        method = getattr(self, "visit_" + type(node).__name__, self.generic_visit)
        return method(node)

    def generic_visit(self, node: Node) -> Any:
        changes: dict[str, object] = {}
        for f in dataclasses.fields(node):  # type: ignore[arg-type]
            if f.name == "loc":
                continue
            old = getattr(node, f.name)
            new = self._value(old)
            if new is not old:
                changes[f.name] = new
        return dataclasses.replace(node, **changes) if changes else node  # type: ignore[type-var]

    def _value(self, value: Any) -> Any:
        if isinstance(value, Node):
            return self.transform(value)
        if isinstance(value, tuple):
            new = tuple(self._value(v) for v in value)
            return value if all(a is b for a, b in zip(new, value)) else new
        if isinstance(value, ArrayType):
            dims = self._value(value.dims)
            return value if dims is value.dims else ArrayType(value.elem, dims)
        return value


N = TypeVar("N", bound=Node)


class _Substitute(Transformer):
    """:func:`substitute`'s transformer."""

    def __init__(self, table: Mapping[str, Expr]) -> None:
        self.table = table

    def visit_Var(self, e: Var) -> Node:
        return self.table.get(e.name, e)


# ---------------------------------------------------------------------------
# Operators and C typing rules

UNARY_OPS = ("-", "!", "~")
ARITH_OPS = ("+", "-", "*", "/", "%")
BITWISE_OPS = ("&", "|", "^")
SHIFT_OPS = ("<<", ">>")
COMPARE_OPS = ("<", "<=", ">", ">=", "==", "!=")
LOGICAL_OPS = ("&&", "||")
BINARY_OPS = ARITH_OPS + BITWISE_OPS + SHIFT_OPS + COMPARE_OPS + LOGICAL_OPS


def promote(t: Scalar) -> Scalar:
    """C integer promotion: types narrower than int become int."""
    if t.is_int and t.bits < 32:
        return I32
    return t


def common_type(a: Scalar, b: Scalar) -> Scalar:
    """C's usual arithmetic conversions (C11 6.3.1.8) for two operand types."""
    if a.is_float or b.is_float:
        if a == F64 or b == F64:
            return F64
        return F32
    a, b = promote(a), promote(b)
    if a == b:
        return a
    if a.is_signed == b.is_signed:
        return a if a.rank >= b.rank else b
    u, s = (a, b) if not a.is_signed else (b, a)
    if u.rank >= s.rank:
        return u
    # The signed type is wider, so it can represent every unsigned value.
    return s


def cast(e: Expr, ty: Scalar) -> Expr:
    """``e`` converted to ``ty`` (``e`` itself if it already has that type)."""
    if e.ty == ty:
        return e
    return Cast(e, ty, loc=e.loc)


def binary(op: str, lhs: Expr, rhs: Expr, *, loc: Loc | None = None) -> Expr:
    """A typed binary operation with C's implicit conversions made explicit."""
    assert op in BINARY_OPS, f"unknown binary operator {op!r}"
    if op in LOGICAL_OPS:
        return Binary(op, lhs, rhs, I32, loc=loc)
    if op in SHIFT_OPS:
        _require_int(op, lhs, rhs, loc)
        t = promote(lhs.ty)
        return Binary(op, cast(lhs, t), cast(rhs, promote(rhs.ty)), t, loc=loc)
    if op in BITWISE_OPS or op == "%":
        _require_int(op, lhs, rhs, loc)
    t = common_type(lhs.ty, rhs.ty)
    res = I32 if op in COMPARE_OPS else t
    return Binary(op, cast(lhs, t), cast(rhs, t), res, loc=loc)


def _require_int(op: str, lhs: Expr, rhs: Expr, loc: Loc | None) -> None:
    for side in (lhs, rhs):
        if side.ty.is_float:
            raise TranspileError(loc, f"operator '{op}' needs integer operands, got {side.ty}")


def unary(op: str, operand: Expr, *, loc: Loc | None = None) -> Expr:
    """A typed unary operation (``-``, ``!``, ``~``)."""
    assert op in UNARY_OPS, f"unknown unary operator {op!r}"
    if op == "!":
        return Unary(op, operand, I32, loc=loc)
    if op == "~" and operand.ty.is_float:
        raise TranspileError(loc, f"operator '~' needs an integer operand, got {operand.ty}")
    t = promote(operand.ty)
    if op == "-" and isinstance(operand, Const):
        # Fold negative literals so that ``-1`` is one Const wherever it came from
        # (C source, the text form, or a pass): the printer relies on this.
        return const(-operand.value, t, loc=loc)
    return Unary(op, cast(operand, t), t, loc=loc)


def select(cond: Expr, then: Expr, orelse: Expr, *, loc: Loc | None = None) -> Expr:
    """A typed conditional expression."""
    t = common_type(then.ty, orelse.ty)
    return Select(cond, cast(then, t), cast(orelse, t), t, loc=loc)


def assign(target: LValue, value: Expr, op: str | None = None, *, loc: Loc | None = None) -> Assign:
    """``target = value`` or, with ``op``, the compound ``target op= value``."""
    if op is not None:
        value = binary(op, target, value, loc=loc)
    return Assign(target, cast(value, target.ty), loc=loc)


# Math functions: C name -> (parameter types, result type).  Double forms and
# their float (``f``-suffixed) twins; the integer abs family.
_F1 = ("sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "fabs", "floor", "ceil",
       "round", "trunc", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
       "cbrt", "erf", "erfc", "rsqrt")
_F2 = ("pow", "fmin", "fmax", "fmod", "atan2", "hypot", "copysign")
MATH_FUNCS: dict[str, tuple[tuple[Scalar, ...], Scalar]] = {}
for _n in _F1:
    MATH_FUNCS[_n] = ((F64,), F64)
    MATH_FUNCS[_n + "f"] = ((F32,), F32)
for _n in _F2:
    MATH_FUNCS[_n] = ((F64, F64), F64)
    MATH_FUNCS[_n + "f"] = ((F32, F32), F32)
MATH_FUNCS["abs"] = ((I32,), I32)
MATH_FUNCS["labs"] = ((I64,), I64)
MATH_FUNCS["llabs"] = ((I64,), I64)
del MATH_FUNCS["rsqrt"]  # not C; kept out of the table (CUDA-only)
del MATH_FUNCS["rsqrtf"]


def call(fn: str, args: tuple[Expr, ...], params: tuple[Scalar, ...], ret: Scalar,
         *, loc: Loc | None = None) -> Call:
    """A typed call: arguments converted to the parameter types."""
    if len(args) != len(params):
        raise TranspileError(loc, f"'{fn}' takes {len(params)} argument(s), got {len(args)}")
    return Call(fn, tuple(cast(a, p) for a, p in zip(args, params)), ret, loc=loc)


def const(value: int | float, ty: Scalar, *, loc: Loc | None = None) -> Const:
    """A literal of type ``ty``, with the value rounded to it (f32) or wrapped (ints)."""
    if ty.is_float:
        v = float(value)
        if ty == F32:
            import numpy as np

            v = float(np.float32(v))
        return Const(v, ty, loc=loc)
    return Const(wrap_int(int(value), ty), ty, loc=loc)


def wrap_int(v: int, ty: Scalar) -> int:
    """``v`` reduced modulo 2**bits into the range of integer type ``ty``."""
    m = 1 << ty.bits
    v %= m
    if ty.is_signed and v >= m >> 1:
        v -= m
    return v


# ---------------------------------------------------------------------------
# Queries


def array_uses(body: tuple[Stmt, ...] | Node) -> dict[str, tuple[bool, bool]]:
    """For each array named under ``body``: (is it read, is it written)."""
    uses: dict[str, tuple[bool, bool]] = {}

    def mark(name: str, read: bool) -> None:
        r, w = uses.get(name, (False, False))
        uses[name] = (True, w) if read else (r, True)

    def visit(n: Node) -> None:
        if isinstance(n, Assign) and isinstance(n.target, Index):
            mark(n.target.array, read=False)
            for ix in n.target.indices:
                visit(ix)
            visit(n.value)
            return
        if isinstance(n, Index):
            mark(n.array, read=True)
        for c in children(n):
            visit(c)

    for root in body if isinstance(body, tuple) else (body,):
        visit(root)
    return uses


def intent_of(read: bool, written: bool) -> Intent:
    """The intent of an array that is ``read`` and/or ``written``."""
    if written and read:
        return "inout"
    return "out" if written else "in"

"""The reference's typed signature, read from the IR, and the candidate's, read from the .cu text.

:func:`kernel_sig` turns an :class:`ir.Kernel` into a :class:`KernelSig`:
one :class:`ArgSpec` per C parameter (scalar type or array element type,
intent, extents as IR expressions), plus which integer scalars are *size
parameters* (they appear in an extent), and which integer input arrays hold
indices (:class:`IndexUse`: their values subscript another array, directly,
through a local, or as a loop's bounds) so that the inputs drawn for them keep
the C program defined (:meth:`KernelSig.index_range`).  :func:`eval_int` evaluates an extent
for concrete sizes; :func:`estimate_work` bounds the number of statement
executions (interval arithmetic over loop bounds), which sets the shape
budget and the reduction depth used by the tolerance.

:func:`find_dropin` finds ``extern "C" void NAME(...)`` in a .cu file's text and
:func:`check_dropin` compares its parameters with the reference's.  Stage (a)
decides the drop-in's signature with the compiler (:mod:`.symbols`); this
reading of the text is the fallback without nvcc, the simulator stage's check of
``NAME_device``, and the locations in diagnostics.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from transpile import ir
from transpile.ir.interp import DTYPES


@dataclass(frozen=True, slots=True)
class ArgSpec:
    """One C parameter of the reference.

    ``role`` is ``size`` (an integer scalar used in some extent), ``int`` (any
    other integer scalar), ``float`` (a floating scalar) or ``array``.
    """

    name: str
    ty: ir.Scalar
    role: str
    intent: str = "in"
    dims: tuple[ir.Expr, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.role == "array"

    @property
    def dtype(self) -> np.dtype:
        return DTYPES[self.ty.name]


@dataclass(frozen=True, slots=True)
class IndexUse:
    """Values of the integer input array ``array``, plus ``offset``, index dimension ``dim`` of
    ``target``: ``target[..][array[..] + offset]..``, also through a local assigned once
    (``int j = idx[i]; .. a[j + 1]``).  With ``bound``, the values are the bounds of a loop whose
    variable, plus ``offset``, is that index (``for k in ptr[i]..ptr[i + 1] { val[k] }``), so a
    value may also equal the extent (an empty loop at the end)."""

    array: str
    target: str
    dim: int
    offset: int
    bound: bool = False
    minus: ir.Expr | None = None
    """With it, the index is ``minus - value + offset`` (``c[n - k - 1]`` with ``k = ip[i]``)."""


@dataclass(frozen=True, slots=True)
class KernelSig:
    """The reference kernel's parameters, in C order, and the index uses of its integer input arrays."""

    name: str
    args: tuple[ArgSpec, ...]
    indices: tuple[IndexUse, ...] = ()
    ret: str | None = None
    """The return slot (``ir.Kernel.ret``): the last array of ``args``, which the C function and the
    drop-in return instead of taking (:func:`transpile.verify.reference.call_dropin`)."""
    extents: Mapping[str, tuple[ir.Expr, ...]] = dataclasses.field(default_factory=dict)
    """The extents of every array ``indices`` names as a target (parameters and local arrays)."""

    @property
    def ret_arg(self) -> ArgSpec | None:
        """The return slot's argument, or None for a void function."""
        return next((a for a in self.args if a.name == self.ret), None) if self.ret is not None else None

    def index_range(self, array: str, env: Mapping[str, int | float]) -> tuple[int, int, bool] | None:
        """The values ``array`` may hold for the scalars in ``env`` so that every index use of it
        stays inside its target's extent: ``(lo, hi, sorted)``, inclusive, ``lo >= 0`` (integer
        inputs are drawn non-negative), ``sorted`` when the values are loop bounds (drawn in
        order, so that ``ptr[i]..ptr[i + 1]`` ranges are not empty); None when the array holds no
        indices or no value keeps every use inside (an empty target)."""
        uses = [u for u in self.indices if u.array == array]
        if not uses:
            return None
        lo, hi = 0, None
        for u in uses:
            try:
                extent = max(0, eval_int(self.extents[u.target][u.dim], env))
                base = None if u.minus is None else eval_int(u.minus, env)
            except (KeyError, IndexError, ValueError):
                return None
            if base is not None:  # 0 <= base - v + offset <= extent - 1
                lo = max(lo, base + u.offset - extent + 1)
                top = base + u.offset
            else:
                lo = max(lo, -u.offset)
                top = extent - u.offset - (0 if u.bound else 1)
            hi = top if hi is None else min(hi, top)
        if hi is None or lo > hi:
            return None
        return lo, hi, any(u.bound for u in uses)

    @property
    def arrays(self) -> tuple[ArgSpec, ...]:
        return tuple(a for a in self.args if a.is_array)

    @property
    def outputs(self) -> tuple[ArgSpec, ...]:
        """Arrays the kernel writes (intent ``out`` or ``inout``)."""
        return tuple(a for a in self.arrays if a.intent != "in")

    @property
    def size_params(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args if a.role == "size")

    @property
    def other_ints(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.args if a.role == "int")

    def shape(self, arg: ArgSpec, env: Mapping[str, int | float]) -> tuple[int, ...]:
        """The numpy shape of array ``arg`` for the scalar values in ``env`` (negative extents: 0)."""
        return tuple(max(0, eval_int(d, env)) for d in arg.dims)

    def nbytes(self, env: Mapping[str, int | float]) -> dict[str, int]:
        """Bytes of every array for the scalars in ``env``."""
        return {a.name: math.prod(self.shape(a, env)) * a.dtype.itemsize for a in self.arrays}


def kernel_sig(k: ir.Kernel) -> KernelSig:
    """The signature of kernel ``k``.

    A pointer parameter indexed by hand that :mod:`passes.delinearize` splits gets the shape of its
    view (``double *A`` used as ``A[i*n + j]``: ``n x n``), so that the input recipes see the matrix
    (a Cholesky factorisation needs a positive definite one); the memory is the same row-major block.
    """
    from passes import delinearize

    k = delinearize.run(k)
    in_extents: set[str] = set()
    for p in k.params:
        if isinstance(p.ty, ir.ArrayType):
            for d in p.ty.dims:
                in_extents |= {n.name for n in ir.walk(d) if isinstance(n, ir.Var)}
    for s in k.body:
        if isinstance(s, ir.Alloc):
            for d in s.ty.dims:
                in_extents |= {n.name for n in ir.walk(d) if isinstance(n, ir.Var)}
    in_extents |= loop_sizes(k, in_extents)
    args = []
    for p in k.params:
        if isinstance(p.ty, ir.ArrayType):
            args.append(ArgSpec(p.name, p.ty.elem, "array", p.intent, p.ty.dims))
        elif p.ty.is_float:
            args.append(ArgSpec(p.name, p.ty, "float"))
        else:
            args.append(ArgSpec(p.name, p.ty, "size" if p.name in in_extents else "int"))
    uses = index_uses(k)
    extents = {p.name: p.ty.dims for p in k.params if isinstance(p.ty, ir.ArrayType)}
    extents.update({n.name: n.ty.dims for n in ir.walk(k) if isinstance(n, ir.Alloc)})
    return KernelSig(k.name, tuple(args), uses, ret=k.ret,
                     extents={u.target: extents[u.target] for u in uses if u.target in extents})


def loop_sizes(k: ir.Kernel, in_extents: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """The integer scalar parameters outside every extent that bound a loop whose variable subscripts
    an array: the sizes of a program whose arrays have fixed extents (PolyBench's ``int ni`` with
    ``double C[NI][NJ]``, ``NI`` a macro).  The verifier shrinks and varies them like extents
    (:func:`transpile.verify.synth.shapes`); a time-step count (``for t < tsteps``, ``t`` in no
    subscript) is not one of them."""
    ints = {p.name for p in k.params if not isinstance(p.ty, ir.ArrayType) and p.ty.is_int} - set(in_extents)
    found: set[str] = set()
    for loop in ir.walk(k):
        if not isinstance(loop, ir.For):
            continue
        names = {n.name for e in (loop.lo, loop.hi) for n in ir.walk(e) if isinstance(n, ir.Var)} & ints
        if names - found and any(isinstance(n, ir.Index) and any(isinstance(v, ir.Var) and v.name == loop.var
                                                                 for e in n.indices for v in ir.walk(e))
                                 for n in ir.walk(loop)):
            found |= names
    return found


def _unit(e: ir.Expr) -> tuple[ir.Expr, int]:
    """``e`` as ``base + offset`` for an integer constant offset (integer casts looked through)."""
    if isinstance(e, ir.Cast) and e.ty.is_int and e.operand.ty.is_int:
        return _unit(e.operand)
    if isinstance(e, ir.Binary) and e.op in ("+", "-") and e.ty.is_int:
        if isinstance(e.rhs, ir.Const):
            base, off = _unit(e.lhs)
            return base, off + (int(e.rhs.value) if e.op == "+" else -int(e.rhs.value))
        if e.op == "+" and isinstance(e.lhs, ir.Const):
            base, off = _unit(e.rhs)
            return base, off + int(e.lhs.value)
    return e, 0


def index_uses(k: ir.Kernel) -> tuple[IndexUse, ...]:
    """Where the values of ``k``'s integer input arrays are indices (:class:`IndexUse`).

    Recognised: a subscript ``P[..] + c`` (``c`` an integer constant, integer casts allowed),
    the same through a local scalar declared with that value and never assigned again, and a
    loop whose bounds have that form and whose variable appears in a subscript as ``v + c``.
    Other uses (``2 * P[i]``, ``P[i] * n + j``) give no constraint: their inputs are drawn as for
    any integer array, and the verifier's guard zones still catch an access outside an array."""
    index_arrays = {p.name for p in k.params
                    if isinstance(p.ty, ir.ArrayType) and p.ty.elem.is_int and p.intent == "in"}
    params = {p.name for p in k.params if not isinstance(p.ty, ir.ArrayType)}
    decls = collections.Counter(n.name for n in ir.walk(k) if isinstance(n, ir.Decl))
    assigned = {n.target.name for n in ir.walk(k) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}
    once = {name for name, count in decls.items() if count == 1 and name not in assigned}
    found: list[IndexUse] = []

    def source(e: ir.Expr, env: Mapping[str, tuple[str, int]]) -> tuple[str, int] | None:
        """``(P, c)`` when ``e`` is ``P[..] + c`` or a local holding one."""
        base, off = _unit(e)
        if isinstance(base, ir.Index) and base.array in index_arrays:
            return base.array, off
        if isinstance(base, ir.Var) and base.name in env:
            array, inner = env[base.name]
            return array, inner + off
        return None

    def negated(e: ir.Expr, env: Mapping[str, tuple[str, int]]) -> tuple[str, int, ir.Expr] | None:
        """``(P, c, E)`` when ``e`` is ``E - (P[..] + d) + c'`` (``c = c' - d``), ``E`` free of ``P``."""
        base, off = _unit(e)
        if isinstance(base, ir.Binary) and base.op == "-" and base.ty.is_int:
            src = source(base.rhs, env)
            if src is not None and not any(isinstance(n, ir.Index) for n in ir.walk(base.lhs)):
                return src[0], off - src[1], base.lhs
        return None

    def visit(node: ir.Node, env: dict[str, tuple[str, int]], loops: dict[str, list[tuple[str, int]]]) -> None:
        if isinstance(node, ir.Index):
            for dim, e in enumerate(node.indices):
                if (src := source(e, env)) is not None:
                    found.append(IndexUse(src[0], node.array, dim, src[1]))
                    continue
                if (neg := negated(e, env)) is not None:
                    if all(isinstance(v, ir.Const) or (isinstance(v, ir.Var) and v.name in params)
                           for v in ir.walk(neg[2]) if isinstance(v, (ir.Var, ir.Const))):
                        found.append(IndexUse(neg[0], node.array, dim, neg[1], minus=neg[2]))
                    continue
                base, off = _unit(e)
                if isinstance(base, ir.Var) and base.name in loops:
                    for array, bound_off in loops[base.name]:
                        found.append(IndexUse(array, node.array, dim, off + bound_off, bound=True))
        if isinstance(node, ir.For):
            for e in (node.lo, node.hi):
                visit(e, env, loops)
            bounds = [src for e in (node.lo, node.hi) if (src := source(e, env)) is not None]
            inner = {n: v for n, v in loops.items() if n != node.var}
            if bounds and node.step > 0:
                inner[node.var] = bounds
            block(node.body, {n: v for n, v in env.items() if n != node.var}, inner)
            return
        if isinstance(node, ir.If):
            visit(node.cond, env, loops)
            for branch in (node.then, node.orelse):
                block(branch, dict(env), loops)
            return
        for child in ir.children(node):
            visit(child, env, loops)
        if isinstance(node, ir.Decl) and node.init is not None and node.name in once:
            if (src := source(node.init, env)) is not None:
                env[node.name] = src

    def block(stmts: tuple[ir.Stmt, ...], env: dict[str, tuple[str, int]],
              loops: dict[str, list[tuple[str, int]]]) -> None:
        for s in stmts:
            visit(s, env, loops)

    block(k.body, {}, {})
    return tuple(dict.fromkeys(found))


# ---------------------------------------------------------------------------
# Integer expressions over the scalar parameters


def _cdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def eval_int(e: ir.Expr, env: Mapping[str, int | float]) -> int:
    """Value of integer expression ``e`` (C semantics) with variables from ``env``.

    Raises ``ValueError`` for what an extent cannot contain (array reads, calls).
    """
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.Var):
        if e.name not in env:
            raise ValueError(f"no value for '{e.name}'")
        return int(env[e.name])
    if isinstance(e, ir.Cast):
        v = eval_int(e.operand, env)
        return ir.wrap_int(v, e.ty) if e.ty.is_int else v
    if isinstance(e, ir.Unary):
        v = eval_int(e.operand, env)
        return {"-": -v, "!": int(not v), "~": ~v}[e.op]
    if isinstance(e, ir.Select):
        return eval_int(e.then, env) if eval_int(e.cond, env) else eval_int(e.orelse, env)
    if isinstance(e, ir.Binary):
        a, b = eval_int(e.lhs, env), eval_int(e.rhs, env)
        ops = {
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b,
            "/": lambda: _cdiv(a, b), "%": lambda: a - _cdiv(a, b) * b,
            "<<": lambda: a << b, ">>": lambda: a >> b, "&": lambda: a & b, "|": lambda: a | b,
            "^": lambda: a ^ b, "<": lambda: int(a < b), "<=": lambda: int(a <= b),
            ">": lambda: int(a > b), ">=": lambda: int(a >= b), "==": lambda: int(a == b),
            "!=": lambda: int(a != b), "&&": lambda: int(bool(a and b)), "||": lambda: int(bool(a or b)),
        }
        if e.op in ("/", "%") and b == 0:
            raise ValueError("division by zero in an extent")
        v = ops[e.op]()
        return ir.wrap_int(v, e.ty) if e.ty.is_int else v
    raise ValueError(f"cannot evaluate {type(e).__name__} in an extent")


Interval = tuple[float, float]


def _interval(e: ir.Expr, env: Mapping[str, Interval]) -> Interval | None:
    """Bounds of ``e`` when its variables range over ``env`` (None: unknown)."""
    if isinstance(e, ir.Const):
        return (float(e.value), float(e.value))
    if isinstance(e, ir.Var):
        return env.get(e.name)
    if isinstance(e, ir.Cast):
        return _interval(e.operand, env)
    if isinstance(e, ir.Unary) and e.op == "-":
        v = _interval(e.operand, env)
        return None if v is None else (-v[1], -v[0])
    if isinstance(e, ir.Select):
        a, b = _interval(e.then, env), _interval(e.orelse, env)
        return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    if isinstance(e, ir.Call) and e.fn in ("min", "max") and len(e.args) == 2:
        a, b = _interval(e.args[0], env), _interval(e.args[1], env)
        if a is None or b is None:
            return None
        f = min if e.fn == "min" else max
        return (f(a[0], b[0]), f(a[1], b[1]))
    if isinstance(e, ir.Binary) and e.op in ("+", "-", "*", "/"):
        a, b = _interval(e.lhs, env), _interval(e.rhs, env)
        if a is None or b is None:
            return None
        if e.op == "+":
            return (a[0] + b[0], a[1] + b[1])
        if e.op == "-":
            return (a[0] - b[1], a[1] - b[0])
        if e.op == "*":
            c = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
            return (min(c), max(c))
        if b[0] > 0:  # division by a positive range
            c = (a[0] / b[0], a[0] / b[1], a[1] / b[0], a[1] / b[1])
            return (math.floor(min(c)) - 1, math.ceil(max(c)) + 1)
    return None


def estimate_work(k: ir.Kernel, env: Mapping[str, int | float]) -> int:
    """An upper bound on the statements ``k`` executes for the scalars in ``env``.

    Loop trip counts come from interval bounds of ``lo``/``hi`` over the
    enclosing loop variables; a bound that cannot be evaluated counts as the
    largest integer scalar.
    """
    scalars = {n: (float(v), float(v)) for n, v in env.items()}
    fallback = max([abs(int(v)) for v in env.values() if isinstance(v, int)] + [1])

    def block(stmts: tuple[ir.Stmt, ...], venv: dict[str, Interval]) -> float:
        total = 0.0
        for s in stmts:
            if isinstance(s, ir.For):
                lo, hi = _interval(s.lo, venv), _interval(s.hi, venv)
                if lo is None or hi is None:
                    trips, var = float(fallback), (0.0, float(fallback))
                else:
                    trips = max(0.0, hi[1] - lo[0])
                    var = (lo[0], max(lo[0], hi[1] - 1))
                total += 1 + trips * block(s.body, {**venv, s.var: var})
            elif isinstance(s, ir.If):
                total += 1 + max(block(s.then, venv), block(s.orelse, venv))
            elif isinstance(s, ir.Launch):
                total += block(s.body, venv)
            else:
                total += 1
        return total

    return int(min(block(k.body, dict(scalars)), 1e18))


def reduction_depth(sig: KernelSig, k: ir.Kernel, env: Mapping[str, int | float]) -> float:
    """The average number of updates behind one output element: work / output elements (>= 1)."""
    outs = sum(math.prod(sig.shape(a, env)) for a in sig.outputs)
    return max(1.0, estimate_work(k, env) / max(outs, 1))


# ---------------------------------------------------------------------------
# The candidate's drop-in signature

_TYPE_WORDS: dict[str, str] = {
    "double": "f64", "float": "f32", "int": "i32", "signed": "i32", "signed int": "i32",
    "unsigned": "u32", "unsigned int": "u32", "long": "i64", "long int": "i64", "long long": "i64",
    "long long int": "i64", "signed long": "i64", "signed long long": "i64", "unsigned long": "u64",
    "unsigned long int": "u64", "unsigned long long": "u64", "unsigned long long int": "u64",
    "short": "i16", "short int": "i16", "signed short": "i16", "unsigned short": "u16",
    "unsigned short int": "u16", "char": "i8", "signed char": "i8", "unsigned char": "u8",
    "int8_t": "i8", "int16_t": "i16", "int32_t": "i32", "int64_t": "i64", "uint8_t": "u8",
    "uint16_t": "u16", "uint32_t": "u32", "uint64_t": "u64", "size_t": "u64", "ssize_t": "i64",
    "ptrdiff_t": "i64", "void": "void",
}
_QUALIFIERS = {"const", "volatile", "restrict", "__restrict__", "__restrict", "struct", "register"}


@dataclass(frozen=True, slots=True)
class CParam:
    """A parameter of the candidate's drop-in: scalar type name (``f64``, ``void``, or ``?``) and pointer-ness."""

    text: str
    ty: str
    pointer: bool


def _mask(text: str) -> str:
    from transpile.sim.rewrite import mask

    return mask(text)


def _split_params(s: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(s):
        depth += c in "([{<"
        depth -= c in ")]}>"
        if c == "," and depth == 0:
            parts.append(s[start:i])
            start = i + 1
    parts.append(s[start:])
    return [p.strip() for p in parts if p.strip()]


def _parse_param(text: str) -> CParam:
    t = text.split("=")[0]
    pointer = "*" in t or "[" in t
    t = re.sub(r"\[[^\]]*\]", " ", t).replace("*", " ").replace("&", " ")
    words = [w for w in re.findall(r"[A-Za-z_]\w*", t) if w not in _QUALIFIERS]
    # The last word is the parameter's name unless the remaining words are no type.
    for cut in (len(words) - 1, len(words)):
        key = " ".join(words[:cut])
        if key in _TYPE_WORDS:
            return CParam(text, _TYPE_WORDS[key], pointer)
    return CParam(text, "?", pointer)


def find_dropin(text: str, name: str) -> tuple[list[CParam] | None, bool]:
    """The parameters of the definition of ``name`` in .cu ``text`` and whether it is ``extern "C"``.

    Returns ``(None, False)`` when no definition with a body is found.
    """
    found = _definition(text, name)
    return (None, False) if found is None else (found[0], found[1])


def dropin_returns(text: str, name: str) -> str | None:
    """The scalar type name (``f64``, ``void``, ``?``) that the definition of ``name`` in ``text``
    returns, or None when there is no definition."""
    found = _definition(text, name)
    return None if found is None else found[2]


def _directives_blanked(m: str) -> str:
    """Masked text ``m`` with preprocessor directives (and their continuation lines) blanked: a
    ``#define CK(x) do { ... } while (0)`` or an ``#if defined(X)`` is no call and no definition."""
    out = list(m)
    for d in re.finditer(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", m, re.M):
        for k in range(d.start(), d.end()):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


def definition_offset(text: str, name: str) -> int | None:
    """Where the definition of ``name`` starts in ``text`` (its name), for diagnostics; None if not found."""
    found = _definition(text, name)
    return None if found is None else found[3]


def _definition(text: str, name: str) -> tuple[list[CParam], bool, str, int] | None:
    """Parameters, ``extern "C"``-ness, return type and offset of the definition of ``name`` in ``text``.

    A reading of the text, kept for the simulator's ``NAME_device`` check and for diagnostics: the
    drop-in's signature is decided by the compiler (:mod:`transpile.verify.symbols`)."""
    m = _directives_blanked(_mask(text))
    blocks = [(b.end(), _close(m, b.end() - 1)) for b in re.finditer(r'\bextern\s*"\s*"\s*\{', m)]
    for d in re.finditer(rf"\b{re.escape(name)}\s*\(", m):
        open_paren = d.end() - 1
        close = _close(m, open_paren)
        if close < 0 or not re.match(r"\s*(?:noexcept\s*)?\{", m[close + 1:]):
            continue
        head_start = max(m.rfind(";", 0, d.start()), m.rfind("}", 0, d.start()), m.rfind("{", 0, d.start())) + 1
        head = m[head_start:d.start()]
        if "(" in head or "=" in head or "return" in head.split():
            continue  # a call, not a definition
        extern_c = bool(re.search(r'\bextern\s*"\s*"', head)) or any(a <= d.start() < b for a, b in blocks)
        params = _split_params(text[open_paren + 1:close])
        if params == ["void"]:
            params = []
        words = [w for w in re.findall(r"[A-Za-z_]\w*", re.sub(r'"[^"]*"', " ", head))
                 if w not in _QUALIFIERS and w not in ("extern", "static", "inline", "__host__")]
        returns = _TYPE_WORDS.get(" ".join(words), "?") if "*" not in head else "?"
        return [_parse_param(p) for p in params], extern_c, returns, d.start()
    return None


def _close(m: str, i: int) -> int:
    depth = 0
    for j in range(i, len(m)):
        if m[j] in "({[":
            depth += 1
        elif m[j] in ")}]":
            depth -= 1
            if depth == 0:
                return j
    return -1


def check_dropin(sig: KernelSig, params: list[CParam], returns: str | None = None) -> list[str]:
    """Differences between the candidate's drop-in parameters and the reference's (empty: compatible).

    The drop-in of a C function that returns a value (``sig.ret``) takes every parameter but the
    return slot and returns the slot's type (``returns``, from :func:`dropin_returns`); the
    device entry ``NAME_device`` takes the slot too, as a pointer (pass ``returns=None`` for it)."""
    problems = []
    args = sig.args
    slot = sig.ret_arg
    if slot is not None and returns is not None:
        args = tuple(a for a in sig.args if a.name != sig.ret)
        if returns != "?" and (returns == "void" or DTYPES[returns].itemsize != slot.dtype.itemsize
                               or (returns[0] == "f") != slot.ty.is_float):
            problems.append(f"{sig.name} must return {slot.ty.name} (the C function's result), found {returns}")
    if len(params) != len(args):
        return [*problems, f"{sig.name} takes {len(params)} parameter(s); the reference takes {len(args)}"]
    for i, (a, p) in enumerate(zip(args, params), start=1):
        want = f"{a.ty.name}{'*' if a.is_array else ''}"
        if a.is_array != p.pointer:
            problems.append(f"parameter {i} ('{a.name}'): expected {'a pointer' if a.is_array else 'a scalar'} "
                            f"({want}), found '{p.text}'")
        elif p.ty == "?":
            continue  # a typedef we do not know: accept
        elif a.is_array and p.ty == "void":
            continue
        elif p.ty == "void" or DTYPES[p.ty].itemsize != a.dtype.itemsize or (p.ty[0] == "f") != a.ty.is_float:
            problems.append(f"parameter {i} ('{a.name}'): expected {want}, found '{p.text}'")
    return problems

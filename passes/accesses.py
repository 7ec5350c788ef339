"""Access analysis: every statement's reads and writes, subscripts split into affine parts.

An analysis, not a transform: ``analyze(kernel) -> list[Stmt]`` with one
:class:`StmtInfo` per statement instance family (assignment, declaration, if
condition, loop-bound evaluation), in program order, with stable ids
``S0, S1, ...`` (pre-order over the kernel body).  Each access records the
enclosing loops (outermost first) and, per subscript, an :class:`Affine`
form in loop variables and parameters, or ``None`` where the subscript is not
affine (then every consumer must treat that dimension as "any index").

Scalars are accesses too, with no subscripts: ``x = x + 1`` reads and writes
``x``.  Loop variables are not accesses (they are the iteration vector).

Parameters, for affinity, are integer scalars that nothing in the kernel
writes: scalar kernel parameters and top-level locals assigned only once,
before any loop (e.g. ``int m = n - 1;``) — both are constants for the
duration of any loop nest.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from transpile import ir


# Affine(coeffs, const): sum(coeffs[v] * v) + const over loop variables and
# parameters; coefficients are nonzero integers.
@dataclass(frozen=True, slots=True)
class Affine:
    """An affine integer expression."""

    coeffs: tuple[tuple[str, int], ...]
    const: int

    @staticmethod
    def of(coeffs: dict[str, int], const: int) -> Affine:
        return Affine(tuple(sorted((k, v) for k, v in coeffs.items() if v != 0)), const)

    def coeff(self, name: str) -> int:
        return dict(self.coeffs).get(name, 0)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(k for k, _ in self.coeffs)


@dataclass(frozen=True, slots=True)
class Access:
    """One array or scalar reference of a statement."""

    name: str
    write: bool
    subscripts: tuple[Affine | None, ...]  # () for scalars
    node: ir.Expr = field(compare=False)

    @property
    def is_scalar(self) -> bool:
        return isinstance(self.node, ir.Var)


@dataclass(frozen=True, slots=True)
class StmtInfo:
    """A statement with its enclosing loops and its accesses.

    ``seq`` is the statement's pre-order number: two instances of statements
    with equal iteration vectors on their common loops execute in ``seq``
    order, which is all the textual order a dependence test needs.
    """

    seq: int
    node: ir.Node = field(compare=False)
    loops: tuple[ir.For, ...] = field(compare=False)
    accesses: tuple[Access, ...]
    kind: str  # 'assign' | 'decl' | 'cond' (an if condition or return) | 'bounds'

    @property
    def id(self) -> str:
        return f"S{self.seq}"

    @property
    def depth(self) -> int:
        return len(self.loops)

    def reads(self) -> Iterator[Access]:
        return (a for a in self.accesses if not a.write)

    def writes(self) -> Iterator[Access]:
        return (a for a in self.accesses if a.write)


def parameters(kernel: ir.Kernel) -> frozenset[str]:
    """Integer scalars that are constant throughout every loop nest of ``kernel``."""
    written: dict[str, int] = {}
    for n in ir.statements(kernel):
        if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var):
            written[n.target.name] = written.get(n.target.name, 0) + 1
    names = {p.name for p in kernel.params if isinstance(p.ty, ir.Scalar) and p.ty.is_int
             and p.name not in written}
    for s in kernel.body:  # top-level single-assignment locals
        if isinstance(s, ir.Decl) and s.ty.is_int and s.init is not None and s.name not in written:
            names.add(s.name)
    return frozenset(names)


def affine(e: ir.Expr, names: frozenset[str] | set[str]) -> Affine | None:
    """``e`` as an affine form over ``names`` (loop variables and parameters), if it is one."""
    r = _affine(e, names)
    return None if r is None else Affine.of(*r)


def _affine(e: ir.Expr, names: frozenset[str] | set[str]) -> tuple[dict[str, int], int] | None:
    if not e.ty.is_int:
        return None
    if isinstance(e, ir.Const):
        return {}, int(e.value)
    if isinstance(e, ir.Var):
        return ({e.name: 1}, 0) if e.name in names else None
    if isinstance(e, ir.Cast):
        # Widening integer casts keep the value; narrowing or from float does not.
        if e.operand.ty.is_int and e.ty.bits >= e.operand.ty.bits and e.ty.is_signed:
            return _affine(e.operand, names)
        return None
    if isinstance(e, ir.Unary) and e.op == "-":
        r = _affine(e.operand, names)
        return None if r is None else ({k: -v for k, v in r[0].items()}, -r[1])
    if isinstance(e, ir.Binary) and e.op in ("+", "-", "*") and e.ty.is_signed:
        a, b = _affine(e.lhs, names), _affine(e.rhs, names)
        if a is None or b is None:
            return None
        if e.op == "*":
            if not a[0]:
                a, b = b, a
            if b[0]:
                return None  # product of two non-constants
            k = b[1]
            return {n: c * k for n, c in a[0].items()}, a[1] * k
        sign = 1 if e.op == "+" else -1
        coeffs = dict(a[0])
        for n, c in b[0].items():
            coeffs[n] = coeffs.get(n, 0) + sign * c
        return coeffs, a[1] + sign * b[1]
    return None


def analyze(kernel: ir.Kernel) -> list[StmtInfo]:
    """The statements of ``kernel`` with their accesses, in program order (a new list each call)."""
    def fresh(k: ir.Kernel) -> list[StmtInfo]:
        out: list[StmtInfo] = []
        _block(k.body, (), parameters(k), out)
        return out

    return list(per_kernel("accesses", kernel, fresh))


_T = TypeVar("_T")
RECENT_KERNELS = 16
_recent: OrderedDict[tuple[str, int], tuple[ir.Kernel, object]] = OrderedDict()
_recent_enabled = True


def per_kernel(what: str, kernel: ir.Kernel, compute: Callable[[ir.Kernel], _T]) -> _T:
    """``compute(kernel)``, remembered for the last :data:`RECENT_KERNELS` kernel objects (per ``what``).

    IR nodes are immutable, so an analysis of one kernel object stays right for as long as the
    object lives; the passes ask the same analysis of one kernel several times (every pass that
    changes nothing hands the next pass the same object).  The memo holds the kernel itself, so its
    ``id`` cannot be reused while remembered.  Callers must not modify what is returned (or must
    copy it first)."""
    key = (what, id(kernel))
    hit = _recent.get(key) if _recent_enabled else None
    if hit is not None and hit[0] is kernel:
        _recent.move_to_end(key)
        return hit[1]  # type: ignore[return-value]
    value = compute(kernel)
    if _recent_enabled:
        _recent[key] = (kernel, value)
        while len(_recent) > RECENT_KERNELS:
            _recent.popitem(last=False)
    return value


def set_recent(enabled: bool) -> None:
    """Turn the memo of :func:`per_kernel` on or off (off: forgets and recomputes every time)."""
    global _recent_enabled
    _recent_enabled = enabled
    clear_recent()


def clear_recent() -> None:
    """Forget what :func:`per_kernel` remembers."""
    _recent.clear()


def analyze_body(body: tuple[ir.Stmt, ...], loops: tuple[ir.For, ...], params: frozenset[str]) -> list[StmtInfo]:
    """The statements of ``body``, which sits inside ``loops`` (outermost first) of a kernel with the
    parameters ``params``, as :func:`analyze` describes them within that kernel, numbered from 0.

    For analyses of one part of a kernel that must ask the questions the whole kernel's analysis
    would (a pass that changes one nest need not analyse the others again)."""
    out: list[StmtInfo] = []
    _block(body, loops, params, out)
    return out


def _block(body: tuple[ir.Stmt, ...], loops: tuple[ir.For, ...], params: frozenset[str],
           out: list[StmtInfo]) -> None:
    names = params | {lp.var for lp in loops}

    def emit(node: ir.Node, acc: list[Access], kind: str) -> None:
        out.append(StmtInfo(len(out), node, loops, tuple(acc), kind))

    for s in body:
        if isinstance(s, ir.Assign):
            acc = [*_reads(s.value, names)]
            if isinstance(s.target, ir.Index):
                for ix in s.target.indices:
                    acc.extend(_reads(ix, names))
            acc.append(_access(s.target, True, names))
            emit(s, acc, "assign")
        elif isinstance(s, ir.Decl):
            # A declaration without an initialiser creates an instance but writes nothing.
            acc = []
            if s.init is not None:
                acc = [*_reads(s.init, names), Access(s.name, True, (), ir.Var(s.name, s.ty))]
            emit(s, acc, "decl")
        elif isinstance(s, ir.If):
            emit(s, list(_reads(s.cond, names)), "cond")
            _block(s.then, loops, params, out)
            _block(s.orelse, loops, params, out)
        elif isinstance(s, ir.For):
            emit(s, [*_reads(s.lo, names), *_reads(s.hi, names)], "bounds")
            _block(s.body, loops + (s,), params, out)
        elif isinstance(s, ir.Launch):
            _block(s.body, loops, params, out)
        elif isinstance(s, ir.Return):
            emit(s, list(_reads(s.value, names)) if s.value is not None else [], "cond")


def _access(e: ir.Var | ir.Index, write: bool, names: frozenset[str] | set[str]) -> Access:
    if isinstance(e, ir.Var):
        return Access(e.name, write, (), e)
    return Access(e.array, write, tuple(affine(ix, names) for ix in e.indices), e)


def _reads(e: ir.Expr, names: frozenset[str] | set[str]) -> Iterator[Access]:
    for n in ir.walk(e):
        if isinstance(n, ir.Index):
            yield _access(n, False, names)
        elif isinstance(n, ir.Var) and n.name not in names:
            yield Access(n.name, False, (), n)

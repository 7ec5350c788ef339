"""CUDA back end: renders mapped kernels (``passes.map_gpu``) as one ``.cu`` file.

Python renders expressions and statements: :class:`ExprPrinter` is a
:class:`~transpile.ir.Visitor` that follows C's precedence table, so only
needed parentheses are printed (plus a few that gcc's ``-Wparentheses`` asks
for); :class:`StmtPrinter` turns statements into indented lines.  Jinja fills
the skeleton ``templates/module.cu.j2`` from prepared lists of strings.

For each kernel ``NAME`` the file holds (see docs in the template):

* ``NAME_kernel0``, ``NAME_kernel1``, ...: one ``__global__`` function per ``Launch``;
  ``par`` loops become grid-stride loops with 64-bit counters.
* ``NAME_device(...)``: host-side scalar code, host loops and the launches
  (inside host loops, once per iteration), on a stream, with device
  pointers; returns the first CUDA error.
* ``NAME(...)``: the drop-in replacement for the C function (host pointers).

The printers and templates mark the CUDA-sensitive regions they write (index
computations, bounds guards, barriers, ...: :mod:`transpile.cuda.regions`);
:func:`emit` strips the marks, :func:`emit_regions` also returns the spans.

Every CUDA spelling the Python side emits is a module-level constant below.
Output is deterministic: generated names are a base plus a counter, chosen to
avoid every identifier of the kernel.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

import jinja2
import numpy as np

from passes import collapse, promote, tile
from passes.builders import substitute_vars
from transpile import ir
from transpile.cuda import names as cuda_names
from transpile.cuda import regions
from transpile.resources import data_dir

# ---------------------------------------------------------------------------
# CUDA / C spellings (the only place the Python side spells them)

C_TYPES: dict[str, str] = {
    "i8": "signed char", "i16": "short", "i32": "int", "i64": "long long",
    "u8": "unsigned char", "u16": "unsigned short", "u32": "unsigned int",
    "u64": "unsigned long long", "f32": "float", "f64": "double",
}
GLOBAL = "__global__"
HOST_DEVICE = "static __host__ __device__"
MAYBE_UNUSED = "[[maybe_unused]]"  # nvcc warns (#177-D) about unused static functions
RESTRICT = "__restrict__"
LAUNCH_BOUNDS = "__launch_bounds__"
INDEX_TYPE = "long long"  # flattened indices and grid-stride counters
UINDEX_TYPE = "unsigned long long"  # grid-stride counter of a u64 loop
THREAD_IDX, BLOCK_IDX, BLOCK_DIM, GRID_DIM = "threadIdx", "blockIdx", "blockDim", "gridDim"
BARRIER = "__syncthreads();"
SMEM_PREFIX = "__shared__ "
#: Threads per block (x, y, z) by number of ``par`` dimensions (the default; ``tile.Options.blocks``).
BLOCK_SHAPES: dict[int, tuple[int, int, int]] = dict(enumerate(tile.DEFAULT_BLOCKS, 1))
#: Largest grid size per dimension (x, y, z).
GRID_CAPS = (2**31 - 1, 65535, 65535)
#: Helpers defined once in the template.
GRID_FN, EXTENT_FN, BLOCK_FN = "transpile_grid", "transpile_extent", "transpile_block"
STREAM_TYPE = "cudaStream_t"
DEFAULT_STREAM = "0"
#: Non-finite float literals (math.h macros).
INFINITIES = {"f64": "HUGE_VAL", "f32": "HUGE_VALF"}
NANS = {"f64": "(double)NAN", "f32": "NAN"}
TEMPLATE = "module.cu.j2"

#: Identifiers a C kernel may use that C++/CUDA (or our skeleton) reserves; renamed ``x_``.
RESERVED = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool catch char8_t char16_t char32_t class
    compl concept consteval constexpr constinit const_cast co_await co_return co_yield decltype
    delete dynamic_cast explicit export false friend inline mutable namespace new noexcept not
    not_eq nullptr operator or or_eq private protected public reinterpret_cast requires
    static_assert static_cast template this thread_local throw true try typeid typename using
    virtual wchar_t xor xor_eq threadIdx blockIdx blockDim gridDim warpSize dim3 size_t
    cudaStream_t cudaError_t transpile_check transpile_extent transpile_grid transpile_block transpile_sm_count
    transpile_mma_ok
""".split())

# C operator precedence (higher binds tighter), as in pycparser's c_generator.
PREC_TERNARY = 3
PREC_UNARY = 15  # unary operators, casts, negative literals
PREC_POSTFIX = 16  # primaries, calls, subscripts
PREC: dict[str, int] = {
    "||": 4, "&&": 5, "|": 6, "^": 7, "&": 8, "==": 9, "!=": 9,
    "<": 10, "<=": 10, ">": 10, ">=": 10, "<<": 11, ">>": 11,
    "+": 12, "-": 12, "*": 13, "/": 13, "%": 13,
}
_BITWISE = frozenset(ir.BITWISE_OPS + ir.SHIFT_OPS)
_COMPARE = frozenset(ir.COMPARE_OPS)
_COMPOUND = frozenset(ir.ARITH_OPS + ir.BITWISE_OPS + ir.SHIFT_OPS)


def ctype(t: ir.Scalar) -> str:
    """The C spelling of scalar type ``t``."""
    return C_TYPES[t.name]


# ---------------------------------------------------------------------------
# Expressions


def literal(value: int | float, ty: ir.Scalar) -> tuple[str, int]:
    """The exact C literal for ``value`` of type ``ty`` and its precedence."""
    if ty.is_float:
        v = float(value)
        if math.isnan(v):
            return NANS[ty.name], PREC_UNARY
        if math.isinf(v):
            return ("-" if v < 0 else "") + INFINITIES[ty.name], PREC_UNARY if v < 0 else PREC_POSTFIX
        # f32: numpy prints the shortest string that round-trips through float32.
        text = repr(v) if ty == ir.F64 else str(np.float32(v))
        if not any(c in text for c in ".e"):
            text += ".0"
        text += "f" if ty == ir.F32 else ""
        return text, PREC_UNARY if text.startswith("-") else PREC_POSTFIX
    v = int(value)
    suffix = {"i32": "", "i64": "LL", "u32": "u", "u64": "ull"}.get(ty.name)
    if suffix is None:  # no C literal of this type: a converted int
        text, _ = literal(v, ir.I32)
        return f"({ctype(ty)}){text}" if v >= 0 else f"({ctype(ty)})({text})", PREC_UNARY
    if ty.is_signed and v == -(1 << (ty.bits - 1)):
        # The magnitude of the minimum does not fit in the type: -2147483648 would be long.
        return f"(-{(1 << (ty.bits - 1)) - 1}{suffix} - 1)", PREC_POSTFIX
    return f"{v}{suffix}", PREC_UNARY if v < 0 else PREC_POSTFIX


class ExprPrinter(ir.Visitor):
    """Renders expressions as C with minimal parentheses.

    ``extents`` maps each array of rank >= 2 to the extent expressions of its
    dimensions 1.. (dimension 0 is not needed to flatten row-major);
    ``rename`` maps user identifiers that clash with C++/CUDA names;
    ``marks`` turns on region markers (:mod:`transpile.cuda.regions`) in the text
    this printer and the :class:`StmtPrinter` built on it produce (the
    kernel emitter's printers; a bare printer gives plain C).
    """

    def __init__(self, extents: Mapping[str, tuple[ir.Expr, ...]] | None = None,
                 rename: Mapping[str, str] | None = None, *, marks: bool = False) -> None:
        # Read-only: ``sizes`` below is derived from it once.
        self.extents: Mapping[str, tuple[ir.Expr, ...]] = MappingProxyType(dict(extents or {}))
        self.rename = dict(rename or {})
        self.marks = marks
        #: The names the extents read (a subscript's constant offset is split only from them).
        self.sizes = frozenset(n.name for d in self.extents.values() for x in d for n in ir.walk(x)
                               if isinstance(n, ir.Var))
        #: The sequential loops' variables around what is being printed (:meth:`StmtPrinter._sequential`).
        self.serial: set[str] = set()

    def mark(self, label: str, text: str) -> str:
        """``text`` marked as a region ``label`` when this printer marks regions, else ``text``."""
        return regions.mark(label, text) if self.marks else text

    def __call__(self, e: ir.Expr) -> str:
        """The C text of ``e``."""
        return self.visit(e)[0]

    def ident(self, name: str) -> str:
        """The C spelling of a user identifier."""
        return self.rename.get(name, name)

    def operand(self, e: ir.Expr, min_prec: int) -> str:
        """``e``'s text, parenthesised unless it binds at least as tightly as ``min_prec``."""
        text, prec = self.visit(e)
        return text if prec >= min_prec else f"({text})"

    def cast_to(self, e: ir.Expr, type_name: str) -> str:
        """``(type_name)e``: the operand is parenthesised unless it is a primary expression."""
        return f"({type_name}){self.operand(e, PREC_POSTFIX)}"

    def generic_visit(self, node: ir.Node) -> tuple[str, int]:
        raise AssertionError(f"not an expression: {node!r}")

    def visit_Const(self, e: ir.Const) -> tuple[str, int]:
        return literal(e.value, e.ty)

    def visit_Var(self, e: ir.Var) -> tuple[str, int]:
        return self.ident(e.name), PREC_POSTFIX

    def visit_Index(self, e: ir.Index) -> tuple[str, int]:
        name = self.ident(e.array)
        if len(e.indices) == 1:
            return f"{name}[{self(e.indices[0])}]", PREC_POSTFIX
        dims = self.extents.get(e.array)
        assert dims is not None and len(dims) == len(e.indices) - 1, f"no extents to flatten {e!r}"
        indices = e.indices
        # Constant offsets (A[i + 1][j][k - 1]) are summed apart from the variable part:
        # ((i * n1 + j) * n2 + k) + (n1 * n2 - 1), so the neighbours of a stencil point share one
        # flattened index (computed once) and add loop-invariant offsets; as one expression,
        # ((i + 1) * n1 + j) * n2 + (k - 1) each, nvcc kept 76 registers for heat-3d's body (40 split).
        # A subscript over a sequential loop's variable keeps its offset (p[i][j - 1] in a j loop
        # prints i * n + (j - 1)): nvcc then sees that it is the element the previous iteration wrote
        # (j - 1 there is j) and forwards the value; adi's sweeps split took 108 global loads
        # against 90, 6030 ms against 5609 ms on the H200 (bench/results/h200_run27.md).
        split = [_split_offset(ix, self.sizes) for ix in indices]
        split = [(ix, 0) if q is not None and q[1] and any(isinstance(n, ir.Var) and n.name in self.serial
                                                          for n in ir.walk(q[0])) else q
                 for ix, q in zip(indices, split)]
        offset = None
        # (Only where a neighbour's variable part is left: A[2][j] stays 2 * n + j.)
        if all(p is not None for p in split) and any(p[1] and not isinstance(p[0], ir.Const)  # type: ignore[index]
                                                     for p in split):
            offset = self._flat_offset([p[1] for p in split], dims)  # type: ignore[index]
            indices = tuple(p[0] for p in split)  # type: ignore[index]
        while len(indices) > 1 and isinstance(indices[0], ir.Const) and indices[0].value == 0:
            indices, dims = indices[1:], dims[1:]  # A[0][j] is A[j]
        if len(indices) == 1:
            if offset is None:
                return f"{name}[{self(indices[0])}]", PREC_POSTFIX
            base = literal(0, ir.I64)[0] if _is_zero(indices[0]) else self.cast_to(indices[0], INDEX_TYPE)
            return f"{name}[{self.mark('index', _plus(base, offset))}]", PREC_POSTFIX
        first = indices[0]
        if isinstance(first, ir.Const):
            acc, prec = literal(first.value, ir.I64)
        elif first.ty.bits == 64:
            acc, prec = self.visit(first)
        else:
            acc, prec = self.cast_to(first, INDEX_TYPE), PREC_UNARY
        # Row-major: ((i0 * n1 + i1) * n2 + i2); i0 is 64-bit, so the rest is too.
        for ix, dim in zip(indices[1:], dims):
            left = acc if prec >= PREC["*"] else f"({acc})"
            acc, prec = f"{left} * {self.operand(dim, PREC['*'] + 1)}", PREC["*"]
            if not _is_zero(ix):
                acc, prec = f"{acc} + {self.operand(ix, PREC['+'] + 1)}", PREC["+"]
        if offset is not None:
            acc = _plus(acc, offset)
        return f"{name}[{self.mark('index', acc)}]", PREC_POSTFIX

    def _flat_offset(self, consts: Sequence[int], dims: Sequence[ir.Expr]) -> str:
        """``((c0 * n1 + c1) * n2 + c2)...`` in 64 bits, zero terms left out; parenthesised unless one
        term.  ``consts`` are the subscripts' constant parts, ``dims`` the extents after the first."""
        acc, prec = "", 0
        for k, c in enumerate(consts):
            if k and acc:
                left = acc if prec >= PREC["*"] else f"({acc})"
                acc, prec = f"{left} * {self.operand(dims[k - 1], PREC['*'] + 1)}", PREC["*"]
            if c and acc:
                acc, prec = f"{acc} {'+' if c > 0 else '-'} {literal(abs(c), ir.I64)[0]}", PREC["+"]
            elif c:
                acc, prec = literal(c, ir.I64)
        return acc if prec >= PREC["*"] else f"({acc})"

    def visit_Unary(self, e: ir.Unary) -> tuple[str, int]:
        inner = self.operand(e.operand, PREC_UNARY)
        if e.op == "-" and inner.startswith("-"):
            inner = f"({inner})"  # never ``--x``
        return f"{e.op}{inner}", PREC_UNARY

    def visit_Binary(self, e: ir.Binary) -> tuple[str, int]:
        p = PREC[e.op]
        # Left-associative: the right operand needs parentheses at equal precedence.
        lhs = self._side(e.op, e.lhs, p)
        rhs = self._side(e.op, e.rhs, p + 1)
        return f"{lhs} {e.op} {rhs}", p

    def _side(self, op: str, child: ir.Expr, min_prec: int) -> str:
        """An operand of ``op``: parenthesised when precedence needs it or gcc's -Wparentheses asks."""
        text, prec = self.visit(child)
        clarify = isinstance(child, ir.Binary) and (
            (op in _BITWISE and child.op != op) or (op == "||" and child.op == "&&")
            or (op in _COMPARE and child.op in _COMPARE))
        return f"({text})" if prec < min_prec or clarify else text

    def visit_Select(self, e: ir.Select) -> tuple[str, int]:
        cond = self.operand(e.cond, PREC_TERNARY + 1)
        then = self.operand(e.then, PREC_TERNARY + 1)  # legal bare, but hard to read
        orelse = self.operand(e.orelse, PREC_TERNARY)
        return f"{cond} ? {then} : {orelse}", PREC_TERNARY

    def visit_Cast(self, e: ir.Cast) -> tuple[str, int]:
        return self.cast_to(e.operand, ctype(e.ty)), PREC_UNARY

    def visit_Call(self, e: ir.Call) -> tuple[str, int]:
        return f"{e.fn}({', '.join(self(a) for a in e.args)})", PREC_POSTFIX


# ---------------------------------------------------------------------------
# Statements


class Namer:
    """Fresh identifiers: ``base``, then ``base1``, ``base2``, ... avoiding every taken name."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken = set(taken)
        self._next: dict[str, int] = {}  # base -> the first suffix not known taken (names are never freed)

    def fresh(self, base: str) -> str:
        """A new name starting with ``base``; it is taken from now on."""
        n = self._next.get(base, 0)
        name = f"{base}{n}" if n else base
        while name in self.taken:
            n += 1
            name = f"{base}{n}"
        self.taken.add(name)
        self._next[base] = n + 1
        return name

    def child(self) -> Namer:
        """A namer for a nested scope: sees everything taken so far, adds privately."""
        return Namer(self.taken)


class StmtPrinter(ir.Visitor):
    """Renders statements as indented C lines (two spaces per level) into ``lines``.

    When ``expr`` marks regions, the printer marks the ones it writes: the
    grid-stride loops' counters (``index``) and bound tests (``guard``), and
    the conditions of ``if`` statements that are bounds tests
    (:meth:`is_bounds_test`).
    """

    #: Whether ``if`` conditions may be bounds guards (device code; the host printer says no).
    in_kernel = True

    def __init__(self, expr: ExprPrinter, namer: Namer, depth: int = 1) -> None:
        self.expr = expr
        self.namer = namer
        self.depth = depth
        self.lines: list[str] = []
        self.rows = 1  # consecutive iterations of the ``y`` par loop per thread (plain launches)
        self.split_rows = True  # rows: an unguarded version for a thread's full group of rows too
        self.stream = 1  # iterations of the ``z`` par loop per thread, a serial loop (3-D plain launches)
        # The coarsened loop's (y unrolled, or z serial), for the x loop: counter, its type, the
        # variable's declaration prefix, the bound, the count, and whether it is the serial z loop.
        self.pending_rows: tuple[str, str, str, str, int, bool] | None = None
        self.atomic: set[str] = set()  # arrays whose updates are atomic (the par loops' ``atomic`` marks)
        self.private: dict[str, str] = {}  # atomic array -> the block's shared copy it updates instead

    def emit(self, stmts: Iterable[ir.Stmt]) -> list[str]:
        """Render ``stmts`` at the current depth; returns all lines so far."""
        for s in stmts:
            self.visit(s)
        return self.lines

    def line(self, text: str) -> None:
        self.lines.append("  " * self.depth + text)

    def mark(self, label: str, text: str) -> str:
        """``text`` marked as a region ``label`` when the printer marks regions."""
        return self.expr.mark(label, text)

    @contextmanager
    def region(self, label: str) -> Iterator[None]:
        """Marks the lines written inside the ``with`` block as one region ``label``.

        The region runs from the first line's text (after its indentation) to
        the end of the last line.
        """
        start = len(self.lines)
        yield
        if not self.expr.marks or len(self.lines) == start:
            return
        text = "\n".join(self.lines[start:])
        pad = len(text) - len(text.lstrip(" "))
        self.lines[start:] = (text[:pad] + regions.mark(label, text[pad:])).split("\n")

    def is_bounds_test(self, cond: ir.Expr) -> bool:
        """Whether ``cond`` is a bounds guard: it keeps a thread inside (part of) the iteration space.

        In kernel code, a conjunction of integer comparisons (``<``, ``<=``,
        ``>``, ``>=``) that reads no memory: wavefront skew guards, triangular
        bounds, ``j - 1 >= 0``, and tests of extents only (``nr > 0 && nq > 0``
        before :mod:`passes.expand`'s copy-back reads ``sum_x[nr - 1][nq - 1]``).
        Equality tests (``lane == 0``) pick a thread for a role; data tests read
        memory.
        """
        if not self.in_kernel:
            return False
        terms = _conjuncts(cond)
        if not all(isinstance(t, ir.Binary) and t.op in _ORDER and not (t.lhs.ty.is_float or t.rhs.ty.is_float)
                   for t in terms):
            return False
        return not any(isinstance(n, (ir.Index, ir.Call)) for n in ir.walk(cond))

    def condition(self, cond: ir.Expr) -> str:
        """The text of an ``if`` condition, marked ``guard`` when it is a bounds test."""
        text = self.expr(cond)
        return self.mark("guard", text) if self.is_bounds_test(cond) else text

    def block(self, stmts: Iterable[ir.Stmt]) -> None:
        self.depth += 1
        self.emit(stmts)
        self.depth -= 1

    def generic_visit(self, node: ir.Node) -> None:
        raise AssertionError(f"cannot render statement {node!r} here")

    def visit_Decl(self, s: ir.Decl) -> None:
        init = "" if s.init is None else f" = {self.expr(s.init)}"
        self.line(f"{ctype(s.ty)} {self.expr.ident(s.name)}{init};")

    def visit_Assign(self, s: ir.Assign) -> None:
        if isinstance(s.target, ir.Index) and s.target.array in self.atomic:
            self._atomic_update(s)
            return
        target = self.expr(s.target)
        rhs = _compound_rhs(s)
        if rhs is not None:
            op, value = rhs
            self.line(f"{target} {op}= {self.expr(value)};")
        else:
            self.line(f"{target} = {self.expr(s.value)};")

    def visit_If(self, s: ir.If) -> None:
        self.line(f"if ({self.condition(s.cond)}) {{")
        self.block(s.then)
        orelse = s.orelse
        while len(orelse) == 1 and isinstance(orelse[0], ir.If):  # else-if chain
            self.line(f"}} else if ({self.condition(orelse[0].cond)}) {{")
            self.block(orelse[0].then)
            orelse = orelse[0].orelse
        if orelse:
            self.line("} else {")
            self.block(orelse)
        self.line("}")

    def visit_Return(self, s: ir.Return) -> None:
        self.line("return;" if s.value is None else f"return {self.expr(s.value)};")

    def bound(self, e: ir.Expr, base: str) -> str:
        """Text of a loop bound re-read every iteration: hoisted unless a constant or variable."""
        if isinstance(e, (ir.Const, ir.Var)):
            return self.expr(e)
        name = self.namer.fresh(base)
        self.line(f"const {ctype(e.ty)} {name} = {self.expr(e)};")
        return name

    def visit_For(self, s: ir.For) -> None:
        if s.par is not None:
            self._grid_stride(s)
        elif s.reduce and self.atomic and all(
                isinstance(c, ir.Assign) and isinstance(c.target, ir.Index) and c.target.array in self.atomic
                for c in s.body):
            self._atomic_reduction(s)
        else:
            self._sequential(s)

    def _atomic_reduction(self, s: ir.For) -> None:
        """A ``reduce`` loop of updates of atomic arrays (``for j reduce(+) { H[B[i]] += X[i][j] }`` in an
        ``atomic(H)`` loop): each target is the same element all along the loop (the mark's proof), so
        the thread sums the terms in a local (the reassociation the mark allows) and updates the element
        once, atomically, instead of once a term."""
        from passes import atomics

        finals: list[ir.Assign] = []  # each target's one update, by its local sum
        body: list[ir.Stmt] = []
        for c in s.body:
            u = atomics.update(c)
            assert u is not None and isinstance(c, ir.Assign), f"not an update in an atomic reduction: {c!r}"
            target, read, op, term = u
            part = ir.Var(self.namer.fresh(f"{target.array}_part"), target.ty)
            self.line(f"{ctype(part.ty)} {part.name} = {self.expr(ir.Const(0, part.ty))};")
            body.append(ir.Assign(part, ir.Binary("+", part, term, part.ty)))
            finals.append(ir.Assign(target, ir.Binary(op, read, part, target.ty)))
        self._sequential(dataclasses.replace(s, body=tuple(body), reduce=()))
        for final in finals:
            self._atomic_update(final)

    def _sequential(self, s: ir.For) -> None:
        """A sequential loop (every thread, or the host, runs all its iterations)."""
        fresh = self.in_kernel and s.var not in self.expr.serial
        if fresh:
            self.expr.serial.add(s.var)
        try:
            self._sequential_loop(s)
        finally:
            if fresh:
                self.expr.serial.discard(s.var)

    def _sequential_loop(self, s: ir.For) -> None:
        t, v, step = ctype(s.ty), self.expr.ident(s.var), s.step
        if step > 0:
            hi = self.bound(s.hi, f"{s.var}_hi")
            inc = f"++{v}" if step == 1 else f"{v} += {step}"
            self.line(f"for ({t} {v} = {self.expr(s.lo)}; {v} < {hi}; {inc}) {{")
            self.block(s.body)
        elif s.ty.is_signed:
            lo = self.bound(s.lo, f"{s.var}_lo")
            dec = f"--{v}" if step == -1 else f"{v} -= {-step}"
            self.line(f"for ({t} {v} = {self.expr(_minus_one(s.hi))}; {v} >= {lo}; {dec}) {{")
            self.block(s.body)
        else:
            # Unsigned downward: `v >= lo` is always true for lo == 0, so count
            # c = v + 1 down from hi and never step below lo (no wrap-around).
            lo = self.bound(s.lo, f"{s.var}_lo")
            c = self.namer.fresh(f"{s.var}_c")
            left = c if _is_zero(s.lo) else f"{c} - {lo}"
            dec = f"--{c}" if step == -1 else f"{c} = {left} > {-step} ? {c} - {-step} : {lo}"
            self.line(f"for ({t} {c} = {self.expr(s.hi)}; {c} > {lo}; {dec}) {{")
            self.line(f"  const {t} {v} = {c} - 1;")
            self.block(s.body)
        self.line("}")

    def _atomic_update(self, s: ir.Assign) -> None:
        """An update ``A[f] +-= e`` of an array of an ``atomic`` par loop (passes/atomics.py) as a CUDA
        atomic (:func:`transpile.cuda.atomics.add_text`), into the block's shared copy of the array
        where the launch keeps one (``private``)."""
        from passes import atomics
        from transpile.cuda.atomics import add_text

        u = atomics.update(s)
        assert u is not None, f"not an update of an atomic array: {s!r}"
        target, _read, op, term = u
        ty = target.ty
        value = self.expr(term) if term.ty == ty else self.expr.cast_to(term, ctype(ty))
        shared = self.private.get(target.array)
        address = f"&{self.expr(target)}" if shared is None else f"&{shared}[{self.expr(target.indices[0])}]"
        self.line(add_text(address, value, ty, op))

    def _grid_stride(self, s: ir.For) -> None:
        """A ``par`` loop: each thread takes every (grid size)-th iteration, in 64 bits."""
        assert s.step == 1, f"par loop with step {s.step}: {s!r}"
        self.atomic |= set(s.atomic)
        a = s.par
        counter_t = UINDEX_TYPE if s.ty == ir.U64 else INDEX_TYPE
        v = self.expr.ident(s.var)
        counter = v if s.ty in (ir.I64, ir.U64) else self.namer.fresh(f"{s.var}_g")
        hi = self.bound(s.hi, f"{s.var}_hi")
        rows = self.rows if a == "y" else self.stream if a == "z" else 1
        scale = f" * {rows}" if rows > 1 else ""
        start = f"({counter_t}){BLOCK_IDX}.{a} * {BLOCK_DIM}.{a} + {THREAD_IDX}.{a}"
        if rows > 1:
            start = f"({start}){scale}"
        if not _is_zero(s.lo):
            start = f"{self.expr.cast_to(s.lo, counter_t)} + {start}"
        stride = f"({counter_t}){GRID_DIM}.{a} * {BLOCK_DIM}.{a}{scale}"
        init = self.mark("index", f"{counter_t} {counter} = {start}")
        test = self.mark("guard", f"{counter} < {hi}")
        step = self.mark("index", f"{counter} += {stride}")
        self.line(f"for ({init}; {test}; {step}) {{")
        if rows > 1:
            # Row coarsening: this thread's ``rows`` consecutive iterations run inside the x loop
            # below, unrolled (y), so that the compiler can keep the rows a stencil shares in
            # registers, or as a serial loop (z: the thread streams through its planes).
            inner = s.body[0] if len(s.body) == 1 and isinstance(s.body[0], ir.For) else None
            if a == "z":
                inner = inner.body[0] if inner is not None and inner.par == "y" and len(inner.body) == 1 \
                    and isinstance(inner.body[0], ir.For) else None
            assert inner is not None and inner.par == "x", f"row coarsening needs the x par loop directly inside: {s!r}"
            self.pending_rows = (counter, counter_t, f"const {ctype(s.ty)} {v} = ({ctype(s.ty)})", hi, rows, a == "z")
            self.block(s.body)
            self.line("}")
            return
        if counter != v:
            self.line("  " + self.mark("index", f"const {ctype(s.ty)} {v} = ({ctype(s.ty)}){counter};"))
        pending = None
        if a == "x":
            pending, self.pending_rows = self.pending_rows, None
        if pending is None:
            self.block(s.body)
        elif pending[5]:
            self._serial_rows(s, *pending[:4], pending[4])
        else:
            y_counter, y_t, y_def, y_hi, rows, _ = pending
            if not self.split_rows:
                self._unrolled_rows(s, y_counter, y_t, y_def, y_hi, rows)
                self.line("}")
                return
            # Two versions: all of the thread's rows in range (no guards, so the compiler may load a
            # row the unrolled iterations share once), and the last, partial group (each row guarded).
            self.line(f"  if ({self.mark('guard', f'{y_counter} + {rows} <= {y_hi}')}) {{")
            self.depth += 1
            self._unrolled_rows(s, y_counter, y_t, y_def, None, rows)
            self.depth -= 1
            self.line("  } else {")
            self.depth += 1
            self._unrolled_rows(s, y_counter, y_t, y_def, y_hi, rows)
            self.depth -= 1
            self.line("  }")
        self.line("}")

    def _serial_rows(self, s: ir.For, z_counter: str, z_t: str, z_def: str, z_hi: str, rows: int) -> None:
        """``s``'s body for planes ``z_counter + 0 .. rows - 1`` (below ``z_hi``) of a streaming thread,
        a serial loop: the next plane's loads meet the ones this thread just made in L1."""
        end = self.namer.fresh("plane_end")
        plane = self.namer.fresh("plane")
        self.line("  " + self.mark("index", f"const {z_t} {end} = {z_counter} + {rows} < {z_hi} ? {z_counter} + {rows} : {z_hi};"))
        # Not unrolled: ptxas gave heat-3d's streaming body 76 registers unrolled, 40 not (sm_90).
        self.line("  #pragma unroll 1")
        self.line(f"  for ({self.mark('index', f'{z_t} {plane} = {z_counter}')}; {self.mark('guard', f'{plane} < {end}')}; "
                  f"{self.mark('index', f'++{plane}')}) {{")
        self.depth += 1
        self.line("  " + self.mark("index", f"{z_def}{plane};"))
        self.block(s.body)
        self.depth -= 1
        self.line("  }")

    def _unrolled_rows(self, s: ir.For, y_counter: str, y_t: str, y_def: str, y_hi: str | None, rows: int) -> None:
        """``s``'s body for rows ``y_counter + 0 .. rows - 1`` of a row-coarsened thread, unrolled;
        each row guarded by ``row < y_hi`` unless ``y_hi`` is None."""
        r = self.namer.fresh("r")
        row = self.namer.fresh("row")
        self.line("  #pragma unroll")
        self.line(f"  for ({self.mark('index', f'int {r} = 0; {r} < {rows}; ++{r}')}) {{")
        self.line("    " + self.mark("index", f"const {y_t} {row} = {y_counter} + {r};"))
        if y_hi is not None:
            self.line(f"    if ({self.mark('guard', f'{row} < {y_hi}')}) {{")
            self.depth += 1
        self.depth += 1
        self.line("  " + self.mark("index", f"{y_def}{row};"))
        self.block(s.body)
        self.depth -= 1
        if y_hi is not None:
            self.depth -= 1
            self.line("    }")
        self.line("  }")


def _plus(acc: str, offset: str) -> str:
    """``acc + offset``, or ``acc - term`` for an offset that is one negative term."""
    return f"{acc} - {offset[1:]}" if offset.startswith("-") else f"{acc} + {offset}"


def _split_offset(ix: ir.Expr, sizes: frozenset[str]) -> tuple[ir.Expr, int] | None:
    """A signed integer subscript as (variable part, constant) where the variable part reads a
    variable that is no array extent (a loop index, not ``n``): ``i + 1`` -> (i, 1), ``1 + i`` ->
    (i, 1), ``w - 2 * i - 1`` -> (w - 2 * i, -1); ``3`` -> (0, 3); anything else -> (ix, 0).  None
    if unsigned, or for ``n - 1`` (splitting an extent's neighbour only spreads loop-invariant
    arithmetic)."""
    if not (ix.ty.is_int and ix.ty.is_signed):  # type: ignore[union-attr]
        return None
    if isinstance(ix, ir.Const):
        return ir.Const(0, ix.ty), int(ix.value)
    if isinstance(ix, ir.Binary) and ix.op in ("+", "-") and ix.lhs.ty == ix.ty and ix.rhs.ty == ix.ty:
        var, const = (ix.lhs, ix.rhs) if isinstance(ix.rhs, ir.Const) else (ix.rhs, ix.lhs) if ix.op == "+" else (None, None)
        if var is not None and isinstance(const, ir.Const):
            if not any(isinstance(n, ir.Var) and n.name not in sizes for n in ir.walk(var)):
                return None
            return var, int(const.value) * (-1 if ix.op == "-" else 1)
    return ix, 0


def _is_zero(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.value == 0


_ORDER = frozenset(("<", "<=", ">", ">="))


def _conjuncts(e: ir.Expr) -> list[ir.Expr]:
    """The operands of a (nested) ``&&`` chain; ``[e]`` for anything else."""
    if isinstance(e, ir.Binary) and e.op == "&&":
        return _conjuncts(e.lhs) + _conjuncts(e.rhs)
    return [e]


def _minus_one(e: ir.Expr) -> ir.Expr:
    """``e - 1`` in ``e``'s promoted type, folded for constants."""
    t = ir.promote(e.ty)
    if isinstance(e, ir.Const):
        return ir.const(e.value - 1, t)
    return ir.Binary("-", ir.cast(e, t), ir.Const(1, t), t)


def _compound_rhs(s: ir.Assign) -> tuple[str, ir.Expr] | None:
    """``(op, e)`` when ``s`` is ``x = x op e`` (possibly converted back), printable as ``x op= e``.

    ``x op= e`` means ``x = (T)(x op e)`` under the usual conversions, so the
    sugar applies when the IR computed exactly that.
    """
    v = s.value
    if isinstance(v, ir.Cast):
        v = v.operand
    if not isinstance(v, ir.Binary) or v.op not in _COMPOUND:
        return None
    lhs = v.lhs.operand if isinstance(v.lhs, ir.Cast) else v.lhs
    if lhs != s.target:
        return None
    t = s.target.ty
    expected = ir.promote(t) if v.op in ir.SHIFT_OPS else ir.common_type(t, v.rhs.ty)
    if v.ty != expected or (v.lhs is not lhs and v.lhs.ty != expected):
        return None
    if (v is s.value) != (v.ty == t):  # a conversion back iff the types differ
        return None
    return v.op, v.rhs


# ---------------------------------------------------------------------------
# Kernels


def _var_names(node: ir.Node) -> set[str]:
    return {n.name for n in ir.walk(node) if isinstance(n, ir.Var)}


def _assigned(node: ir.Node) -> set[str]:
    return {n.target.name for n in ir.walk(node) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}


def _par_chain(launch: ir.Launch) -> list[ir.For]:
    """The leading perfect nest of grid ``par`` loops of ``launch``, outermost first (a row program's
    ``par(lane)`` loops are the row's, not the grid's)."""
    chain: list[ir.For] = []
    body = launch.body
    while body and ir.grid_par(body[0]):
        chain.append(body[0])
        body = body[0].body
    return chain


def _check_mapped(kernel: ir.Kernel, body: tuple[ir.Stmt, ...] | None = None) -> None:
    for s in kernel.body if body is None else body:
        if isinstance(s, ir.Launch):
            assert not any(isinstance(n, (ir.Launch, ir.Alloc)) for b in s.body for n in ir.walk(b)), \
                f"Launch or Alloc inside a Launch in {kernel.name}: {s!r}"
        elif _is_host_loop(s):
            _check_mapped(kernel, s.body)  # type: ignore[union-attr]
        elif not isinstance(s, ir.Alloc):
            assert not any(isinstance(n, (ir.Index, ir.For, ir.Launch, ir.Alloc, ir.Return))
                           for n in ir.walk(s)), \
                f"kernel {kernel.name} is not mapped to the GPU (run passes.map_gpu first): {s!r}"


def _is_host_loop(s: ir.Stmt) -> bool:
    """A ``For`` outside any launch that contains launches (``passes.map_gpu``'s host loops)."""
    return isinstance(s, ir.For) and any(isinstance(n, ir.Launch) for n in ir.walk(s))


def _host_loops(body: tuple[ir.Stmt, ...]) -> list[ir.For]:
    """The host loops under ``body`` (outermost first, pre-order)."""
    out: list[ir.For] = []
    for s in body:
        if _is_host_loop(s):
            out.append(s)  # type: ignore[arg-type]
            out.extend(_host_loops(s.body))  # type: ignore[union-attr]
    return out


def _host_launches(body: tuple[ir.Stmt, ...]) -> list[ir.Launch]:
    """The launches under ``body`` in program order (inside host loops too)."""
    out: list[ir.Launch] = []
    for s in body:
        if isinstance(s, ir.Launch):
            out.append(s)
        elif _is_host_loop(s):
            out.extend(_host_launches(s.body))  # type: ignore[union-attr]
    return out


class _HostPrinter(StmtPrinter):
    """Renders the host side of ``NAME_device`` as template steps.

    Host statements become ``host`` steps (lines); each ``Launch`` becomes a
    ``launch`` step indented to its depth; a host loop's header and closing
    brace are host lines around its body's steps.  The template's launch
    step leaves the innermost enclosing loop with ``break`` on an error, so
    each host loop is followed by a check that breaks out of the next level.
    """

    in_kernel = False  # a host ``if`` is never a bounds guard (launch guards are the template's)

    def __init__(self, emitter: _KernelEmitter) -> None:
        super().__init__(emitter.expr, emitter.host_namer, depth=2)
        self.emitter = emitter
        self.steps: list[dict[str, object]] = []
        self.scope: dict[str, ir.Scalar] = {}  # host loop variables and locals visible here

    def flush(self) -> None:
        if self.lines:
            self.steps.append({"kind": "host", "lines": self.lines})
            self.lines = []

    def visit_Launch(self, s: ir.Launch) -> None:
        self.flush()
        kern, step = self.emitter.launch(s, dict(self.scope))
        self.steps.append({**step, "pad": "  " * (self.depth - 2)})
        self.emitter.kernels.append(kern)
        self.emitter.launch_log.append(LaunchInfo(str(kern["name"]), str(step["shape"]), s,
                                                  tuple(_block_bound(str(b)) for b in step["block"])))

    def visit_Alloc(self, s: ir.Alloc) -> None:
        self.flush()
        e = self.emitter
        self.steps.append({
            "kind": "alloc", "name": e.ident(s.name), "pad": "",
            "extents": [f"const {INDEX_TYPE} {h} = {e.expr(d)};" for h, d in e.hoisted.get(s.name, [])],
            "bytes": e.host_namer.fresh(f"{s.name}_bytes"), "size": e._size(s.ty)})

    def visit_Decl(self, s: ir.Decl) -> None:
        e = self.emitter
        if s.name in e.device_scalars:
            self.line(f"// {ctype(s.ty)} {e.ident(s.name)} lives on the device: "
                      f"{e.names['scal']}->{e.ident(s.name)}")
            return
        self._host_only(s)
        if self.depth > 2:
            self.scope[s.name] = s.ty
        super().visit_Decl(s)

    def visit_Assign(self, s: ir.Assign) -> None:
        self._host_only(s)
        super().visit_Assign(s)

    def visit_If(self, s: ir.If) -> None:
        self._host_only(s)
        super().visit_If(s)

    def _host_only(self, s: ir.Stmt) -> None:
        assert not (_var_names(s) | _assigned(s)) & set(self.emitter.device_scalars), \
            f"host statement touches a device scalar: {s!r}"

    def visit_For(self, s: ir.For) -> None:
        bounds = _var_names(s.lo) | _var_names(s.hi)
        assert s.par is None and not bounds & set(self.emitter.device_scalars), f"bad host loop {s!r}"
        from transpile.cuda import oneblock as cuda_oneblock
        from transpile.cuda import steps as cuda_steps

        e = self.emitter
        on = e.tiling is None or e.tiling.enabled
        one = on and cuda_oneblock.eligible(s)
        fused = cuda_steps.plan(e, s) if on and (e.tiling is None or e.tiling.steps) else None
        if one or fused:  # the loop's steps are made first, then placed (deeper) in the else branches
            self.flush()
            outer_steps, self.steps = self.steps, []
            first_kernel = len(e.kernels)
        saved = dict(self.scope)
        self.scope[s.var] = s.ty
        super().visit_For(s)
        self.scope = saved
        err = e.names["err"]
        self.line(f"if ({err} != cudaSuccess) {{")
        self.line("  break;")
        self.line("}")
        if not (one or fused):
            return
        self.flush()
        loop_steps, self.steps = self.steps, outer_steps
        launches = [st for st in loop_steps if st.get("kind") == "launch"]
        built = cuda_oneblock.build(e, s, launches, e.kernels[first_kernel:], "  " * self.depth) \
            if one and len(launches) == len(s.body) else None
        if built is None and fused is None:
            self.steps += loop_steps
            return
        depth = 0  # else branches opened around the launch-by-launch loop
        if built is not None:
            kernel, args, setup, ok = built
            e.kernels.append(kernel)
            launch = (f"{kernel['name']}<<<dim3(1u), dim3({kernel['threads']}u), 0, {e.names['stream']}>>>"
                      f"({', '.join(args)});")
            self.lines += setup
            self.line(f"if ({ok}) {{  // one block runs the whole loop (transpile/cuda/oneblock.py)")
            self.line(f"  {e.expr.mark('launch', launch)}")
            self.line(f"  {err} = cudaGetLastError();")
            self.line(f"  if ({err} != cudaSuccess) {{")
            self.line("    break;")
            self.line("  }")
            self.line("} else {")
            depth += 1
        if fused is not None:
            pad = "  " * (self.depth + depth)
            kernel, setup, fused_lines, ok = cuda_steps.build(e, s, fused, dict(self.scope), pad)
            e.kernels.append(kernel)
            self.lines += setup
            self.lines.append(f"{pad}if ({ok}) {{")
            self.lines += fused_lines
            self.lines.append(f"{pad}}} else {{")
            depth += 1
        self.flush()
        for _ in range(depth):
            loop_steps = [_indent(st) for st in loop_steps]
        self.steps += loop_steps
        for k in reversed(range(depth)):
            self.lines.append("  " * (self.depth + k) + "}")


def _indent(step: dict[str, object]) -> dict[str, object]:
    """A host step one level deeper (the launch-by-launch loop in the else branch of a one-block test)."""
    if step.get("kind") == "host":
        return {**step, "lines": ["  " + str(x) for x in step["lines"]]}  # type: ignore[attr-defined]
    return {**step, "pad": "  " + str(step.get("pad", ""))}


class _KernelEmitter:
    """Prepares the template context of one mapped kernel.

    Scalars: scalar params and top-level ``Decl`` statements live on the host and are
    passed by value, except *device scalars*, written by one launch and used by
    another: those live in one device struct (``NAME_scalars``), passed as
    pointers, loaded into a local at kernel start and stored back at the end.
    Arrays: params (device buffers the caller owns) and top-level ``Alloc``
    statements (allocated on the stream where declared, freed at the end).
    """

    def __init__(self, kernel: ir.Kernel, module_names: set[str], tiling: tile.Options | None = None) -> None:
        _check_mapped(kernel)
        self.k = kernel
        self._param_pos: dict[str, int] | None = None  # parameter name -> position, once a launch asks
        self.tiling = tiling
        self.name = kernel.name
        used = ir.identifiers(kernel)
        namer = Namer(used | module_names | RESERVED)
        self.rename = {n: namer.fresh(n + "_") for n in sorted(used & RESERVED)}
        self.namer = namer
        self.launches = _host_launches(kernel.body)
        self.kernels: list[dict[str, object]] = []
        self.launch_log: list[LaunchInfo] = []  # what each Launch became (launches())
        self.scratch: list[tuple[str, str]] = []  # (declaration, name) of launch scratch (cuda_sweep)
        self.folds: dict[str, list[dict[str, object]]] = {}  # launch kernel name -> the kernels after it (its fold)
        # Launches repeated by a host loop: a scalar they write must persist
        # across iterations, so it lives on the device even if only they use it.
        looped = set().union(*(_assigned(x) for x in _host_loops(kernel.body)))
        self.host_decls = {s.name: s.ty for s in kernel.body if isinstance(s, ir.Decl)}
        scalars = {p.name: p.ty for p in kernel.params if isinstance(p.ty, ir.Scalar)}
        self.scalars: dict[str, ir.Scalar] = {**scalars, **self.host_decls}  # type: ignore[dict-item]
        # A scalar param that only one launch references is passed by value and
        # modified in place there; bare host Decls are always shared (map_gpu).
        written = set().union(*(_assigned(x) for x in self.launches)) if self.launches else set()
        refs = [_var_names(x) for x in self.launches]
        self.device_scalars = [n for n in self.scalars if n in written
                               and (n in self.host_decls or n in looped or sum(n in r for r in refs) > 1)]
        self.arrays: dict[str, ir.ArrayType] = {p.name: p.ty for p in kernel.params
                                                if isinstance(p.ty, ir.ArrayType)}
        self.allocs = {s.name: s.ty for s in kernel.body if isinstance(s, ir.Alloc)}
        self.original: ir.Kernel | None = None  # the kernel before lowering: the drop-in's host path

        # Extents for flattening.  A dimension is rendered inline when it reads only
        # scalar params that never change; otherwise its value is hoisted (on entry
        # for params, where declared for Allocs) into a `long long` passed to kernels.
        fixed = set(scalars) - _assigned(kernel)
        self.fixed_scalars = frozenset(fixed)  # scalar params no statement assigns: the host has them throughout
        self.extents: dict[str, tuple[ir.Expr, ...]] = {}
        self.extent_vars: dict[str, set[str]] = {}
        self.hoisted: dict[str, list[tuple[str, ir.Expr]]] = {}
        for name, ty in {**self.arrays, **self.allocs}.items():
            dims: list[ir.Expr] = []
            for d, dim in enumerate(ty.dims[1:], start=1):
                if _var_names(dim) <= fixed:
                    dims.append(dim)
                    self.extent_vars.setdefault(name, set()).update(_var_names(dim))
                else:
                    hname = namer.fresh(f"{name}_n{d}")
                    self.hoisted.setdefault(name, []).append((hname, dim))
                    dims.append(ir.Var(hname, ir.I64))
            if dims:
                self.extents[name] = tuple(dims)
        self.expr = ExprPrinter(self.extents, self.rename, marks=True)
        self.names = {b: namer.fresh(b) for b in ("err", "stream", "scal", "freed", "hook", "hook_ctx")}
        self.host_namer = namer.child()  # names local to the device function

    def ident(self, name: str) -> str:
        return self.rename.get(name, name)

    def _size(self, ty: ir.ArrayType) -> str:
        """Byte size of an array, in size_t arithmetic (negative extents count as 0)."""
        return " * ".join(f"{EXTENT_FN}({self.expr(d)})" for d in ty.dims) + f" * sizeof({ctype(ty.elem)})"

    # -- __global__ kernels

    def launch(self, launch: ir.Launch, host_locals: Mapping[str, ir.Scalar]
               ) -> tuple[dict[str, object], dict[str, object]]:
        """The ``__global__`` function of ``launch`` and the host-side launch step.

        ``host_locals``: host loop variables and host-loop locals in scope,
        passed by value like host scalars.
        """
        name = f"{self.name}_kernel{len(self.kernels)}"
        uses = ir.array_uses(launch.body)
        referenced = _var_names(launch)
        for a in uses:
            referenced |= self.extent_vars.get(a, set())
        written = _assigned(launch)
        chain = _par_chain(launch)
        namer = self.namer.child()
        params: list[str] = []
        args: list[str] = []
        # C parameter order, then local arrays and host locals in declaration order (of the
        # parameters, only those the launch names: a generated function may have thousands).
        if self._param_pos is None:
            self._param_pos = {p.name: n for n, p in enumerate(self.k.params)}
        named = sorted({self._param_pos[v] for v in (*uses, *referenced) if v in self._param_pos})
        candidates: list[tuple[str, ir.Type]] = [(self.k.params[n].name, self.k.params[n].ty) for n in named]
        candidates += [*self.allocs.items(), *self.host_decls.items(), *host_locals.items()]
        for var, ty in candidates:
            if isinstance(ty, ir.ArrayType) and var in uses:
                const = "" if uses[var][1] else "const "
                params.append(f"{const}{ctype(ty.elem)} *{RESTRICT} {self.ident(var)}")
                args.append(self.ident(var))
            elif isinstance(ty, ir.Scalar) and var in referenced and var not in self.device_scalars:
                params.append(f"{ctype(ty)} {self.ident(var)}")
                args.append(self.ident(var))
        loads: list[str] = []
        stores: list[str] = []
        for var in self.device_scalars:
            if var not in referenced:
                continue
            assert not (chain and var in written), f"parallel launch writes device scalar {var}: {launch!r}"
            st, ptr = ctype(self.scalars[var]), namer.fresh(f"{var}_ptr")
            params.append(f"{st} *{RESTRICT} {ptr}")
            args.append(f"&{self.names['scal']}->{self.ident(var)}")
            loads.append(f"  {'' if var in written else 'const '}{st} {self.ident(var)} = *{ptr};")
            if var in written:
                stores.append(f"  *{ptr} = {self.ident(var)};")
        for var, _ty in candidates:
            if var in uses:
                for hname, _dim in self.hoisted.get(var, []):
                    params.append(f"{INDEX_TYPE} {hname}")
                    args.append(hname)
        from transpile.cuda import reduce as cuda_reduce
        from transpile.cuda import tiled as cuda_tiled

        shaped = None  # (qualifiers, body, launch config) from a specialised emitter
        # A matmul-like launch, as it is or with two outer par loops merged over the leading subscripts
        # of every array they index (passes/collapse.py: doitgen's batched product).
        # A launch with atomic updates (passes/atomics.py) is printed plainly: no tiled, reduction or
        # promoted form knows them.
        atomic = any(isinstance(n, ir.For) and n.atomic for n in ir.walk(launch))
        planned = collapse.plan(launch, self.tiling, {**self.arrays, **self.allocs}, namer.taken) \
            if chain and not stores and not atomic else None
        plan, flat = planned if planned is not None else (None, None)
        expr = self.expr
        if flat is not None:
            namer.taken.add(flat.var)
            chain = _par_chain(flat.launch)
            extents = {a: d[1:] if a in flat.arrays else d for a, d in self.extents.items()}
            expr = ExprPrinter(extents, self.rename, marks=True)
        red = cuda_reduce.shape(launch) if plan is None and not atomic else None
        if red == "sweep":  # one pass over a matrix for row and column reductions, and a fold launch
            from transpile.cuda import sweep as cuda_sweep

            return cuda_sweep.launch(self, launch, name, params, args, loads, stores, namer, dict(host_locals))
        if red == "chain":  # a row's reductions, then its column terms, one pass over a matrix; a fold launch
            from transpile.cuda import chain as cuda_chain

            return cuda_chain.launch(self, launch, name, params, args, loads, stores, namer, dict(host_locals))
        if red == "block" and not host_locals and cuda_reduce.grid_ready(launch):
            # a reduction outside host loops: the whole GPU, partials and a fold (one block in host loops)
            return cuda_reduce.grid_launch(self, launch, name, params, args, loads, stores, namer)
        if plan is not None:  # matmul-like: block tiles, shared memory, register micro-tiles
            shaped = cuda_tiled.launch(plan, expr, namer, loads, self._config(chain))
        elif red is not None:  # parallel reductions (passes.reduce_gpu): one block, or one warp per row
            shaped = cuda_reduce.launch(launch, red, self.expr, namer, loads, stores, self._config(chain),
                                        self.host_namer, self.fixed_scalars)
        if shaped is not None:
            quals, body, config = shaped
            more_params, more_args = config.pop("params", []), config.pop("args", [])
            for a in config.pop("shared_arrays", []):  # cuda_reduce.thread0_shared: threads read what thread 0 stored
                params = [p.replace(f"*{RESTRICT} ", "*") if p.endswith(f" {self.ident(a)}") else p for p in params]  # type: ignore[attr-defined]
            fallback = config.pop("fallback", None)
            if fallback is not None:  # a tensor-core kernel: its FMA kernel where it is not compiled in
                fb = self.namer.fresh(f"{name}_fma")
                self.folds[name] = [{"name": fb, "params": params + more_params, "body": fallback["body"],  # type: ignore[index, operator]
                                     "qualifiers": fallback["qualifiers"]}]  # type: ignore[index]
                config["alt"] = {"kernel": fb, "grid": fallback["grid"], "block": fallback["block"]}  # type: ignore[index]
            return ({"name": name, "params": params + more_params, "body": body, "qualifiers": quals},  # type: ignore[operator]
                    {"kind": "launch", "kernel": name, "args": args + more_args, **config})  # type: ignore[operator]
        printer = StmtPrinter(self.expr, namer)
        printer.rows = self._rows(chain)
        printer.stream = tile.launch_stream(self.tiling, chain)
        # The unguarded copy of a row group pays in 2-D launches (H200, against the guarded form alone:
        # jacobi-2d 1.06x, fdtd-2d 1.02x at 8192^2); a 3-D body's second copy took heat-3d from 64 to
        # 80 registers (4 -> 3 blocks of 256 per SM) and 0.84x (bench/results/h200_run18c_stencils.md).
        printer.split_rows = not any(loop.par == "z" for loop in chain)
        # Array elements a sequential loop keeps re-reading live in registers (passes/promote.py);
        # not in the naive mapping (tiling off), the baseline the benchmark compares against.
        if (self.tiling is None or self.tiling.enabled) and not atomic:  # a promoted element would not be atomic
            launch = promote.run_launch(launch, namer.fresh)
        body = printer.emit(launch.body)
        threads = math.prod(self._block(len(chain))) if chain else 1
        config = self._config(chain)
        private = self._private_bins(launch, chain, namer, params, args, config) if atomic else None
        if private is not None:  # the same loop again, its updates into the block's shared bins
            from transpile.cuda import atomics as cuda_atomics

            array, shared, flag, count, ty = private
            shared_printer = StmtPrinter(self.expr, namer)
            shared_printer.private = {array: shared}
            body = cuda_atomics.private_kernel(shared_printer.emit(launch.body), body, flag, array, shared, count, ty,
                                               self.expr.mark)
        kernel: dict[str, object] = {"name": name, "params": params, "body": loads + body + stores,
                                     "qualifiers": f"{GLOBAL} void {LAUNCH_BOUNDS}({threads})"}
        return kernel, {"kind": "launch", "kernel": name, "args": args, "shape": "plain" if chain else "serial",
                        **config}

    def _private_bins(self, launch: ir.Launch, chain: list[ir.For], namer: Namer, params: list[str],
                      args: list[str], config: dict[str, object]) -> tuple[str, str, str, str, ir.Scalar] | None:
        """For a launch whose one atomic array may live in shared memory (:mod:`transpile.cuda.atomics`):
        adds the host's choice (a kernel parameter, the dynamic shared memory, a grid of at most
        PRIVATE_BLOCKS_PER_SM blocks an SM when taken) to ``params``/``args``/``config`` and returns
        (array, its shared copy, the flag parameter, the bin-count parameter, element type) for
        :func:`transpile.cuda.atomics.private_kernel`; None where the launch has no such array."""
        from transpile.cuda import atomics as cuda_atomics

        arrays = {**self.arrays, **self.allocs}
        name = cuda_atomics.private_array(launch, chain, {a: t.dims for a, t in arrays.items()}, self.fixed_scalars)
        if name is None:
            return None
        ty = arrays[name].elem
        (extent,) = arrays[name].dims
        flag, shared, count_param = namer.fresh("private_bins"), namer.fresh(f"{name}_bins"), namer.fresh(f"{name}_count")
        host_flag, env = self.host_namer.fresh(f"{name}_private"), self.host_namer.fresh("bins_env")
        count = self.expr(extent)
        bytes_ = f"(long long)({count}) * (long long)sizeof({ctype(ty)})"
        trips = list(config["trips"])  # type: ignore[call-overload]
        trips.append({"name": host_flag, "expr": (
            f'[&] {{ const char *{env} = getenv("{cuda_atomics.PRIVATE_ENV}"); const long long b = {bytes_}; '
            f"return b > 0 && b <= ({env} != NULL ? atoll({env}) : {cuda_atomics.PRIVATE_BYTES}LL) ? 1LL : 0LL; }}()")})
        config["trips"] = trips
        grid = list(config["grid"])  # type: ignore[call-overload]
        cap = f"{cuda_atomics.PRIVATE_BLOCKS_PER_SM}u * (unsigned int)transpile_sm_count()"
        grid[0] = f"({host_flag} && {grid[0]} > {cap} ? {cap} : {grid[0]})"
        config["grid"] = grid
        config["smem"] = f"(size_t)({host_flag} ? {bytes_} : 0)"
        params += [f"int {flag}", f"{INDEX_TYPE} {count_param}"]
        args += [f"(int){host_flag}", f"({INDEX_TYPE})({count})"]
        return name, shared, flag, count_param, ty

    def _rows(self, chain: list[ir.For]) -> int:
        """Iterations of the ``y`` par loop per thread in a plain launch (:func:`passes.tile.launch_rows`)."""
        return tile.launch_rows(self.tiling, chain)

    def _block(self, dims: int) -> tuple[int, int, int]:
        """Threads per block of a plain launch with ``dims`` par loops."""
        return self.tiling.blocks[dims - 1] if self.tiling is not None else BLOCK_SHAPES[dims]

    def trip_count(self, loop: ir.For) -> str:
        """``hi - lo`` of a step-1 loop, as host C text (``hi`` alone when ``lo`` is 0)."""
        if _is_zero(loop.lo):
            return self.expr(loop.hi)
        return f"{self.expr.cast_to(loop.hi, INDEX_TYPE)} - {self.expr.operand(loop.lo, PREC['-'] + 1)}"

    def _config(self, chain: list[ir.For]) -> dict[str, object]:
        """Trip counts, guard and grid/block sizes of a launch (host side)."""
        if not chain:
            return {"trips": [], "guard": None, "grid": ["1u"], "block": ["1u"]}
        dims = sorted(loop.par for loop in chain)  # type: ignore[type-var]
        assert dims == sorted("xyz"[: len(chain)]), f"par dims {dims} must be x, x y or x y z"
        shape = self._block(len(chain))
        trips, grid, counts = [], ["1u", "1u", "1u"], []
        for n, loop in enumerate(chain):
            a = "xyz".index(loop.par)  # type: ignore[arg-type]
            t = self._trips(loop, chain[:n], trips)
            counts.append(t)
            per = shape[a] * (self._rows(chain) if loop.par == "y" else
                              tile.launch_stream(self.tiling, chain) if loop.par == "z" else 1)
            grid[a] = f"{GRID_FN}({t}, {per}u, {GRID_CAPS[a]}u)"
        block = [f"{b}u" for b in shape]
        if len(chain) == 1 and shape[0] % 64 == 0:
            # NOTE: a 1-D grid-stride launch may run with fewer threads per block than
            # ``shape`` (transpile_block, decided at run time from the trip count): adi's
            # 4000-iteration sweeps in blocks of 256 used 16 of 132 SMs (2x slower than
            # blocks of 32 on the H200).  The kernel reads blockDim, so only the host changes.
            t = counts[0]
            block[0] = f"{BLOCK_FN}({t}, {shape[0]}u)"
            grid[0] = f"{GRID_FN}({t}, {block[0]}, {GRID_CAPS[0]}u)"
        return {"trips": trips, "guard": " && ".join(f"{t} > 0" for t in counts),
                "grid": grid, "block": block}

    def _trips(self, loop: ir.For, outer: Sequence[ir.For], trips: list[dict[str, str]]) -> str:
        """The host variable holding ``loop``'s trip count (its definitions appended to ``trips``).

        A loop whose bounds read outer par variables (``passes.map_gpu.triangular``: affine in them,
        the outer bounds host-computable) gets the largest trip count over the corners of the outer
        ranges, where an affine count is largest: the grid covers the triangle's bounding box and
        the kernel's own bounds, evaluated per thread, leave the rest idle."""
        reads = _var_names(loop.lo) | _var_names(loop.hi)
        corners = [o for o in outer if o.var in reads]
        t = self.host_namer.fresh(f"{loop.var}_n")
        if not corners:
            trips.append({"name": t, "expr": self.trip_count(loop)})
            return t
        names = []
        for ends in itertools.product(*[(o.lo, ir.binary("-", o.hi, ir.const(1, o.hi.ty))) for o in corners]):
            at = {o.var: ir.cast(e, o.ty) for o, e in zip(corners, ends)}
            name = self.host_namer.fresh(f"{loop.var}_n")
            trips.append({"name": name, "expr": self.trip_count(dataclasses.replace(
                loop, lo=substitute_vars(loop.lo, at), hi=substitute_vars(loop.hi, at)))})
            names.append(name)
        acc = names[0]
        for name in names[1:]:
            top = t if name == names[-1] else self.host_namer.fresh(f"{loop.var}_n")
            trips.append({"name": top, "expr": f"{acc} > {name} ? {acc} : {name}"})
            acc = top
        return acc

    # -- the host side

    def context(self) -> dict[str, object]:
        """The template context of this kernel."""
        host = _HostPrinter(self)
        first_step: list[int] = []  # per top-level statement: the index of its first step
        for s in self.k.body:
            first_step.append(len(host.steps))
            host.emit([s])
            host.flush()
        steps = host.steps

        from transpile.cuda import host as cuda_host
        from transpile.cuda import dropin as dropin_host  # the drop-in's transfers and host path (dropin.cu.j2)

        arrays = cuda_host.arrays(self)
        plan = cuda_host.plan(self.k, {n: bool(a["copy_in"]) for n, a in arrays.items()},
                              {n: bool(a["copy_out"]) for n, a in arrays.items()})
        for n, a in arrays.items():
            a["in_at"], a["out_after"] = plan.in_at[n], plan.out_after[n]
        for point, stmt in reversed(list(enumerate(plan.starts, start=1))):  # the drop-in's copies between phases
            steps.insert(first_step[stmt], {"kind": "hook", "point": point})
        scalar_params = [p.name for p in self.k.params if isinstance(p.ty, ir.Scalar)]
        return {
            "name": self.name,
            "kernels": [g for k in self.kernels for g in (k, *self.folds.get(str(k["name"]), ()))],
            "steps": steps,
            "names": self.names,
            "prototype": self._prototype(),
            "c_params": [self._c_param(p, device=False) for p in self.k.c_params],
            "ret": None if self.k.ret is None else {"ctype": return_ctype(self.k), "name": self.ident(self.k.ret)},
            "device_params": [self._c_param(p, device=True) for p in self.k.params]
            + [f"{STREAM_TYPE} {self.names['stream']}"],
            "device_param_names": [self.ident(p.name) for p in self.k.params] + [self.names["stream"]],
            "device_args": [arrays[p.name]["dev"] if p.name in arrays else self.ident(p.name)
                            for p in self.k.params] + [DEFAULT_STREAM],
            "arrays": list(arrays.values()),
            "dropin": {**cuda_host.dropin(self), "last": plan.last, "phased": bool(plan.starts),
                       "host": dropin_host.host_path(self, self.original, list(arrays.values()))},
            "hoisted": [f"const {INDEX_TYPE} {h} = {self.expr(d)};"
                        for a in self.arrays for h, d in self.hoisted.get(a, [])],
            "allocs": [f"{ctype(ty.elem)} *{self.ident(a)}" for a, ty in self.allocs.items()]
            + [decl for decl, _ in self.scratch],
            "frees": [self.ident(a) for a in self.allocs] + [n for _, n in self.scratch]
            + ([self.names["scal"]] if self.device_scalars else []),
            "device_scalars": [f"{ctype(self.scalars[s])} {self.ident(s)}" for s in self.device_scalars],
            "scalar_inits": [self.ident(s) for s in scalar_params if s in self.device_scalars],
        }

    def _c_param(self, p: ir.Param, *, device: bool) -> str:
        if not device and p.ctype is not None:  # the drop-in: the C type as written (transpile/frontend/header.py)
            return f"{p.ctype}{'' if p.ctype.endswith('*') else ' '}{self.ident(p.name)}"
        if isinstance(p.ty, ir.Scalar):
            return f"{ctype(p.ty)} {self.ident(p.name)}"
        const = "const " if device and p.intent == "in" else ""
        return f"{const}{ctype(p.ty.elem)} *{self.ident(p.name)}"

    def _prototype(self) -> str:
        """The original C declaration, for a comment."""
        parts = []
        for p in self.k.c_params:
            if isinstance(p.ty, ir.Scalar):
                parts.append(f"{ctype(p.ty)} {p.name}")
            elif p.pointer:
                parts.append(f"{ctype(p.ty.elem)} *{p.name}")
            else:
                parts.append(f"{ctype(p.ty.elem)} {p.name}" + "".join(f"[{self.expr(d)}]" for d in p.ty.dims))
        return f"{return_ctype(self.k)} {self.name}({', '.join(parts) or 'void'});"


def return_ctype(k: ir.Kernel) -> str:
    """The C return type of ``k``'s function: ``void``, or its return slot's element type."""
    slot = k.ret_param
    return "void" if slot is None else ctype(slot.ty.elem)  # type: ignore[union-attr]


def _func(f: ir.Func) -> dict[str, object]:
    used = ir.identifiers(f)
    namer = Namer(used | RESERVED)
    rename = {n: namer.fresh(n + "_") for n in sorted(used & RESERVED)}
    expr = ExprPrinter(rename=rename)
    params = ", ".join(f"{ctype(p.ty)} {expr.ident(p.name)}" for p in f.params  # type: ignore[arg-type]
                       ) or "void"
    ret = "void" if f.ret is None else ctype(f.ret)
    return {"signature": f"{MAYBE_UNUSED} {HOST_DEVICE} {ret} {f.name}({params})",
            "body": StmtPrinter(expr, namer).emit(f.body)}


@cache
def environment() -> jinja2.Environment:
    """The jinja2 environment of ``templates/`` (shared by every emitter)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, autoescape=False)
    env.filters["region"] = lambda text, label: regions.mark(label, str(text))
    return env


def emit(module: ir.Module, *, source: str, tiling: tile.Options | None = None,
         host: ir.Module | None = None) -> str:
    """The CUDA translation unit for ``module``, whose kernels must be mapped (``passes.map_gpu``).

    ``source`` names the input in the header comment; ``tiling`` overrides the
    tiled matmul path's defaults (:mod:`passes.tile`); ``host``, the module before lowering, gives
    each drop-in a host path (:mod:`transpile.cuda.dropin`).
    """
    return regions.clean(_render(module, source=source, tiling=tiling, host=host))


def emit_regions(module: ir.Module, *, source: str, tiling: tile.Options | None = None
                 ) -> tuple[str, list[regions.Span]]:
    """:func:`emit`'s text and the CUDA-sensitive regions the emitters marked in it."""
    return regions.strip(_render(module, source=source, tiling=tiling))


def _block_bound(text: str) -> int:
    """The most threads per block a launch's block expression gives (``256u``, or
    ``transpile_block(i_n, 256u)``, which may give fewer: see ``_KernelEmitter._config``)."""
    m = re.fullmatch(rf"(?:{BLOCK_FN}\(\w+, )?(\d+)u\)?", text)
    assert m is not None, f"unexpected block size {text!r}"
    return int(m.group(1))


@dataclass(frozen=True)
class LaunchInfo:
    """What the emitter made of one ``Launch``: its ``__global__`` name, its shape and block size.

    ``shape``: ``plain`` (one thread per iteration of the par loops), ``serial``
    (one thread), ``block``/``rows``/``cols`` (parallel reductions,
    :mod:`transpile.cuda.reduce`), ``sweep`` (row and column reductions in one pass and a fold
    launch, :mod:`transpile.cuda.sweep`), ``tiled`` (FMA register tiles) or ``mma`` (fp64
    tensor cores).  ``launch`` is the IR node, ``block`` the threads per block (x, y, z).
    """

    kernel: str
    shape: str
    launch: ir.Launch
    block: tuple[int, ...]


def launches(module: ir.Module, *, tiling: tile.Options | None = None) -> list[LaunchInfo]:
    """Every launch of the mapped ``module`` as :func:`emit` would emit it, in emission order."""
    return [li for infos in launches_by_kernel(module, tiling=tiling).values() for li in infos]


def launches_by_kernel(module: ir.Module, *, tiling: tile.Options | None = None) -> dict[str, list[LaunchInfo]]:
    """:func:`launches`, grouped by the IR kernel they belong to (kernel name -> its launches)."""
    return {k.name: e.launch_log for k, (e, _) in zip(module.kernels, _emitted(module, tiling))}


def emit_with_launches(module: ir.Module, *, source: str, tiling: tile.Options | None = None,
                       host: ir.Module | None = None) -> tuple[str, dict[str, list[LaunchInfo]]]:
    """:func:`emit`'s text and :func:`launches_by_kernel` of the same emission (one rendering)."""
    text, launches = _render_logged(module, source=source, tiling=tiling, host=host)
    return regions.clean(text), launches


def _render(module: ir.Module, *, source: str, tiling: tile.Options | None, host: ir.Module | None = None) -> str:
    """The translation unit with region markers (:mod:`transpile.cuda.regions`)."""
    return _render_logged(module, source=source, tiling=tiling, host=host)[0]


def _render_logged(module: ir.Module, *, source: str, tiling: tile.Options | None, host: ir.Module | None = None
                   ) -> tuple[str, dict[str, list[LaunchInfo]]]:
    """:func:`_render`, and each kernel's launches as its emitter logged them."""
    assert "\n" not in source, f"bad source name {source!r}"
    emitted = _emitted(module, tiling, host)
    funcs = [_func(f) for f in module.funcs]
    text = environment().get_template(TEMPLATE).render(source=source, funcs=funcs, kernels=[c for _, c in emitted])
    return text, {k.name: e.launch_log for k, (e, _) in zip(module.kernels, emitted)}


def _emitted(module: ir.Module, tiling: tile.Options | None, host: ir.Module | None = None
             ) -> list[tuple[_KernelEmitter, dict[str, object]]]:
    """Each kernel's emitter, after it made the kernel's template context, and that context;
    ``host``: the module before lowering (each drop-in's host path)."""
    cuda_names.check(module)
    module_names = {f.name for f in module.funcs} | {k.name for k in module.kernels}
    generated = {f"{k.name}_{s}" for k in module.kernels for s in ("device", "scalars")}
    generated |= {f"{k.name}_kernel{n}" for k in module.kernels
                  for n in range(sum(isinstance(x, ir.Launch) for x in ir.walk(k)))}
    assert not generated & module_names, f"generated names clash: {sorted(generated & module_names)}"
    emitters = [_KernelEmitter(k, module_names | generated, tiling) for k in module.kernels]
    originals = {k.name: k for k in host.kernels} if host is not None else {}
    for e in emitters:
        e.original = originals.get(e.name)
    return [(e, e.context()) for e in emitters]

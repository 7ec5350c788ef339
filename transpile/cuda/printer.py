"""The CUDA printers every launch form shares: spellings, expressions, statements, names.

The base layer of the back end (:mod:`transpile.cuda` and its launch-form modules import it; it
imports none of them).  Every CUDA spelling the Python side emits is a module-level constant below;
:class:`ExprPrinter` is a :class:`~transpile.ir.Visitor` that follows C's precedence table, so only
needed parentheses are printed (plus a few that gcc's ``-Wparentheses`` asks for);
:class:`StmtPrinter` turns statements into indented lines; :class:`Namer` hands out fresh names
(a base plus a counter, avoiding every identifier of the kernel).  The queries at the end
(:func:`var_names`, :func:`par_chain`, :func:`is_host_loop`, ...) are the emitter's questions about a
mapped kernel.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from types import MappingProxyType

import jinja2

from passes import tile
from passes.launch_forms import par_chain as par_chain
from transpile import ir
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


def add_text(address: str, value: str, ty: ir.Scalar, op: str) -> str:
    """``atomicAdd``/``atomicSub`` of ``value`` (C text of type ``ty``) at ``address`` (a ``ty *``):
    64-bit integers through ``unsigned long long`` (CUDA's only 64-bit atomic add; two's
    complement addition wraps alike), a subtraction as the addition of the negated term (integers
    as unsigned ``0 - e``, which wraps as the subtraction would; 32-bit ones by ``atomicSub``)."""
    if ty in (ir.I64, ir.U64):
        value = f"(unsigned long long)({value})"
        return f"atomicAdd((unsigned long long *){address}, {'0ull - ' if op == '-' else ''}{value});"
    if op == "-":
        if ty in (ir.I32, ir.U32):
            return f"atomicSub({address}, {value});"
        value = f"-({value})"
    return f"atomicAdd({address}, {value});"


def literal(value: int | float, ty: ir.Scalar) -> tuple[str, int]:
    """The exact C literal for ``value`` of type ``ty`` and its precedence."""
    if ty.is_float:
        v = float(value)
        if math.isnan(v):
            return NANS[ty.name], PREC_UNARY
        if math.isinf(v):
            return ("-" if v < 0 else "") + INFINITIES[ty.name], PREC_UNARY if v < 0 else PREC_POSTFIX
        # f32: numpy prints the shortest string that round-trips through float32.
        if ty == ir.F64:
            text = repr(v)
        else:
            import numpy as np  # imported where used: most kernels have no f32 constant

            text = str(np.float32(v))
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
            base = literal(0, ir.I64)[0] if is_zero(indices[0]) else self.cast_to(indices[0], INDEX_TYPE)
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
            if not is_zero(ix):
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


#: Partial sums a host sum loop is split into (:meth:`StmtPrinter._split_sum`): a power of two, as many
#: as an x86 core's two adders keep busy at four cycles' latency, one AVX-512 vector of doubles.
SPLIT_SUMS = 8


class StmtPrinter(ir.Visitor):
    """Renders statements as indented C lines (two spaces per level) into ``lines``.

    When ``expr`` marks regions, the printer marks the ones it writes: the
    grid-stride loops' counters (``index``) and bound tests (``guard``), and
    the conditions of ``if`` statements that are bounds tests
    (:meth:`is_bounds_test`).
    """

    #: Whether ``if`` conditions may be bounds guards (device code; the host printer says no).
    in_kernel = True
    #: The C function whose host code this prints (a ``Trap`` names it); empty in device code.
    function = ""
    #: Host code: ids of the loops printed as partial sums (:meth:`_split_sum`).
    split_sums: frozenset[int] = frozenset()

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

    def visit_Trap(self, s: ir.Trap) -> None:
        assert not self.in_kernel and self.function, f"a trap outside host code: {s!r}"
        for text in trap_lines(self.function, s):
            self.line(text)

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
        elif id(s) in self.split_sums:
            self._split_sum(s)
        elif s.reduce and self.atomic and all(
                isinstance(c, ir.Assign) and isinstance(c.target, ir.Index) and c.target.array in self.atomic
                for c in s.body):
            self._atomic_reduction(s)
        else:
            self._sequential(s)

    def _split_sum(self, s: ir.For) -> None:
        """Host code: a float sum loop (one statement ``x = x + e``, step 1; :data:`split_sums`) as
        :data:`SPLIT_SUMS` partial sums over consecutive iterations, added in a fixed tree and then
        to ``x``: the reassociation the ``reduce`` marks allow on the GPU, here breaking the one
        chain of dependent additions that bounds the C loop (4 cycles an element; durbin, trisolv)
        into independent ones the compiler may also put in vectors."""
        from transpile.ir import accum

        (stmt,) = s.body
        a = accum.accumulation(stmt)
        assert a is not None and a.op == "+" and s.step == 1, f"not a sum loop: {s!r}"
        ty, zero = a.target.ty, self.expr(ir.Const(0, a.target.ty))
        sums = [ir.Var(self.namer.fresh(f"{a.name}_part"), ty) for _ in range(SPLIT_SUMS)]
        v, blocks = self.expr.ident(s.var), self.namer.fresh(f"{s.var}_blocks")
        self.line("{")
        self.depth += 1
        self.line(f"{ctype(ty)} {', '.join(f'{x.name} = {zero}' for x in sums)};")
        hi = self.bound(s.hi, f"{s.var}_hi")
        self.line(f"{ctype(s.ty)} {v} = {self.expr(s.lo)};")
        self.line(f"for (long long {blocks} = ((long long){hi} - (long long){v}) / {SPLIT_SUMS}; {blocks} > 0; "
                  f"--{blocks}, {v} += {SPLIT_SUMS}) {{")
        for u, x in enumerate(sums):
            at = ir.Binary("+", ir.Var(s.var, s.ty), ir.Const(u, s.ty), s.ty) if u else ir.Var(s.var, s.ty)
            self.line(f"  {x.name} += {self.expr(ir.substitute(a.term, {s.var: at}))};")
        self.line("}")
        self.line(f"for (; {v} < {hi}; ++{v}) {sums[0].name} += {self.expr(a.term)};")
        level: list[ir.Expr] = list(sums)
        while len(level) > 1:
            level = [ir.Binary("+", level[k], level[k + 1], ty) for k in range(0, len(level), 2)]
        self.visit_Assign(accum.apply(a, level[0]))
        self.depth -= 1
        self.line("}")

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
            left = c if is_zero(s.lo) else f"{c} - {lo}"
            dec = f"--{c}" if step == -1 else f"{c} = {left} > {-step} ? {c} - {-step} : {lo}"
            self.line(f"for ({t} {c} = {self.expr(s.hi)}; {c} > {lo}; {dec}) {{")
            self.line(f"  const {t} {v} = {c} - 1;")
            self.block(s.body)
        self.line("}")

    def _atomic_update(self, s: ir.Assign) -> None:
        """An update ``A[f] +-= e`` of an array of an ``atomic`` par loop (passes/atomics.py) as a CUDA
        atomic (:func:`add_text`), into the block's shared copy of the array
        where the launch keeps one (``private``)."""
        from passes import atomics

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
        if not is_zero(s.lo):
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


def is_zero(e: ir.Expr) -> bool:
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


# ---------------------------------------------------------------------------
# Kernel parameters and host launches


@dataclasses.dataclass(frozen=True)
class KernelParam:
    """One parameter of a ``__global__`` function, built as structure and printed once (``str``): a scalar
    by value, or a pointer to ``ctype`` elements, ``const`` where the kernel only reads them and
    ``restrict`` where no other pointer of the kernel reaches them (decided where the parameter is
    made, never edited into the printed text)."""

    ctype: str
    name: str
    pointer: bool = False
    const: bool = False
    restrict: bool = False

    def __str__(self) -> str:
        if not self.pointer:
            return f"{self.ctype} {self.name}"
        return f"{'const ' if self.const else ''}{self.ctype} *{RESTRICT + ' ' if self.restrict else ''}{self.name}"


@dataclasses.dataclass(frozen=True)
class ScalarLoad:
    """A device scalar a kernel loads from its struct member (``ptr``) into a local ``name`` at its start:
    ``const`` unless the kernel writes it (and then stores it back); printed read-only in a kernel that
    only reads it whatever the launch does (a grid reduction's partials kernel)."""

    ctype: str
    name: str
    ptr: str
    written: bool

    def line(self, *, read_only: bool = False) -> str:
        """The load as a kernel body line."""
        if read_only:
            return f"  {MAYBE_UNUSED} const {self.ctype} {self.name} = *{self.ptr};"
        return f"  {'' if self.written else 'const '}{self.ctype} {self.name} = *{self.ptr};"

LAST_ERROR = "cudaGetLastError()"
SUCCESS = "cudaSuccess"


def launch_call(kernel: str, grid: str, block: str, smem: str, stream: str, args: Sequence[str]) -> str:
    """The launch statement ``kernel<<<dim3(grid), dim3(block), smem, stream>>>(args);``."""
    return f"{kernel}<<<dim3({grid}), dim3({block}), {smem}, {stream}>>>({', '.join(args)});"


def trap_lines(function: str, s: ir.Trap) -> list[str]:
    """Host lines of ``s``: as ``transpile_check`` reports a failed CUDA call, the message on stderr
    (``transpile: FUNCTION: FILE:LINE:COL: MESSAGE``), then ``abort()``."""
    where = f"{s.loc}: " if s.loc is not None else ""
    text = f"transpile: {function}: {where}{s.message}\n"
    return [f"fputs({c_string(text)}, stderr);", "abort();"]


def c_string(text: str) -> str:
    """``text`` as a C string literal."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n"}
    return '"' + "".join(escapes.get(c, c) if c in escapes or c.isprintable() else f"\\{ord(c):03o}"
                         for c in text) + '"'


def break_on_error(err: str, pad: str) -> list[str]:
    """Host lines: leave the launch block (``break``) when ``err`` is not ``cudaSuccess``."""
    return [f"{pad}if ({err} != {SUCCESS}) {{", f"{pad}  break;", f"{pad}}}"]


def checked_launch(call: str, err: str, pad: str, *, check: bool = True) -> list[str]:
    """Host lines of one launch (:func:`launch_call`, marked as a ``launch`` region), its error taken
    into ``err``, and, unless ``check`` is off (the caller checks once after several), the ``break``
    that leaves the launch block on an error.  Every launch of the emitted code is written here."""
    lines = [pad + regions.mark("launch", call), f"{pad}{err} = {LAST_ERROR};"]
    return lines + break_on_error(err, pad) if check else lines


var_names = ir.var_names  # the emitter's modules ask the printer for it


def assigned(node: ir.Node) -> set[str]:
    return {n.target.name for n in ir.walk(node) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)}


def check_mapped(kernel: ir.Kernel, body: tuple[ir.Stmt, ...] | None = None) -> None:
    for s in kernel.body if body is None else body:
        if isinstance(s, ir.Launch):
            assert not any(isinstance(n, (ir.Launch, ir.Alloc)) for b in s.body for n in ir.walk(b)), \
                f"Launch or Alloc inside a Launch in {kernel.name}: {s!r}"
        elif is_host_loop(s):
            check_mapped(kernel, s.body)  # type: ignore[union-attr]
        elif not isinstance(s, ir.Alloc):
            assert not any(isinstance(n, (ir.Index, ir.For, ir.Launch, ir.Alloc, ir.Return))
                           for n in ir.walk(s)), \
                f"kernel {kernel.name} is not mapped to the GPU (run passes.map_gpu first): {s!r}"


def is_host_loop(s: ir.Stmt) -> bool:
    """A ``For`` outside any launch that contains launches (``passes.map_gpu``'s host loops)."""
    return isinstance(s, ir.For) and ir.has_launch(s)


def host_launches(body: tuple[ir.Stmt, ...]) -> list[ir.Launch]:
    """The launches under ``body`` in program order (inside host loops too)."""
    out: list[ir.Launch] = []
    for s in body:
        if isinstance(s, ir.Launch):
            out.append(s)
        elif is_host_loop(s):
            out.extend(host_launches(s.body))  # type: ignore[union-attr]
    return out


def return_ctype(k: ir.Kernel) -> str:
    """The C return type of ``k``'s function: ``void``, or its return slot's element type."""
    slot = k.ret_param
    return "void" if slot is None else ctype(slot.ty.elem)  # type: ignore[union-attr]


@cache
def environment() -> jinja2.Environment:
    """The jinja2 environment of ``templates/`` (shared by every emitter)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_dir("templates"))),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, autoescape=False)
    env.filters["region"] = lambda text, label: regions.mark(label, str(text))
    return env

"""Reference interpreter for the loop-nest IR: the semantics every pass preserves.

``run(module, kernel, args)`` executes one kernel with C semantics as gcc
computes them on x86-64 (see docs/ir.md): integers wrap to their width,
``/`` and ``%`` truncate toward zero, ``f32`` arithmetic rounds to single
precision after every operation, math functions come from the system libm
through ctypes, ``par`` and ``reduce`` loops and ``Launch`` regions run sequentially
(in program order) unless a shuffle seed is given.
Runtime faults (out-of-bounds access, uninitialised reads, division by zero,
bad shifts, unrepresentable float->int conversions, a function falling off
its end), a ``Trap`` reached and bad arguments raise :class:`InterpError` at
the offending node.
Signed overflow wraps, except ``INT_MIN / -1`` and ``INT_MIN % -1``: x86
``idiv`` traps on those, so they are faults like division by zero.

Design: the IR is compiled once per call into nested Python closures, one
per node, each taking the frame ``env`` (a list of slots).  Names are resolved
to slot numbers, array extents and the arrays' backing lists are bound into the
closures at compile time, so evaluation never dispatches on node type or looks
up a name.  Values are plain Python ``int`` (always wrapped to the type's
range) and ``float`` (for ``f32`` always exactly a single-precision value,
re-rounded after each operation; rounding the exact double result of one
``+ - * /`` to single precision is the correctly rounded single result).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import random
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from operator import itemgetter
from typing import Any

import numpy as np

from transpile import ir
from transpile.diagnostics import Loc, TranspileError
from transpile.ir import accum

__all__ = ["InterpError", "run", "DTYPES"]


class InterpError(TranspileError):
    """A bad kernel argument or a runtime fault, located at the offending node."""


Env = list[Any]
ExprFn = Callable[[Env], Any]
StmtFn = Callable[[Env], Any]

#: numpy dtype of each scalar type.
DTYPES: dict[str, np.dtype] = {
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64), "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64), "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}

_VOID = object()  # what a statement yields for ``return;`` (None: no return)


# ---------------------------------------------------------------------------
# Entry point


def run(module: ir.Module, kernel: str, args: Mapping[str, object], *,
        shuffle: int | None = None) -> dict[str, np.ndarray]:
    """Execute kernel ``kernel`` of ``module`` on ``args`` (keyed by parameter name).

    Scalars are Python or numpy numbers; arrays are numpy arrays of the
    parameter's element dtype and of the shape its extents evaluate to; a
    pointer parameter takes any block of memory, flat or viewed as a matrix,
    as its C caller passes it, and gives it back in the caller's shape.  The
    caller's arrays are not modified.  Returns every array parameter after
    execution, as fresh arrays.

    ``shuffle``: a seed for the *shuffled mode*: every loop marked ``par`` runs
    its iterations in a random order (each execution of the loop draws a new
    permutation), so a loop wrongly marked parallel shows up as a different
    result.  A loop marked ``reduce`` evaluates its terms in a random order
    with the accumulators untouched, combines each accumulator's terms in a
    random association (a random binary tree over the shuffled terms) and
    then applies ``x = x op total`` once, so a wrong reduction mark shows up
    too.  Sequential loops (and every loop without ``shuffle``) keep their
    program order.
    """
    k = next((k for k in module.kernels if k.name == kernel), None)
    if k is None:
        raise InterpError(module.loc, f"no kernel named '{kernel}' in module")
    names = {p.name for p in k.params}
    extra = sorted(set(args) - names)
    if extra:
        raise InterpError(k.loc, f"kernel '{k.name}' has no parameter '{extra[0]}'")
    for p in k.params:
        if p.name not in args:
            raise InterpError(p.loc, f"missing argument for parameter '{p.name}' of kernel '{k.name}'")

    shared = _Shared(module)
    shared.rng = random.Random(shuffle) if shuffle is not None else None
    comp = _FnCompiler(shared, ret=None, in_func=False, name=k.name)
    scope: dict[str, _Sym] = {}
    env: Env = []
    for p in k.params:
        if isinstance(p.ty, ir.Scalar):
            scope[p.name] = _Sym(comp.new_slot(), "param", p.ty)
            env.append(_scalar_arg(p, args[p.name]))
    # Extents are evaluated once, on entry, from the scalar parameters (C99 VLAs).
    for p in k.params:
        if isinstance(p.ty, ir.ArrayType):
            shape = _extents(comp, p, scope, env)
            shared.arrays[p.name] = _array_arg(p, shape, args[p.name])
    # Local arrays (top-level Allocs): undefined until written, like C's.  One of a pointer parameter's
    # type (an entry snapshot, passes/snapshot.py) has its derived extents: negative means empty.
    derived = [p.ty for p in k.params if p.pointer and isinstance(p.ty, ir.ArrayType)]
    for s in k.body:
        if isinstance(s, ir.Alloc):
            shape = _extents(comp, ir.Param(s.name, s.ty, pointer=s.ty in derived, loc=s.loc), scope, env)
            shared.arrays[s.name] = _Array(s.name, s.ty.elem, shape, [None] * math.prod(shape), local=True)
    body = comp.block(k.body, scope)
    env.extend([None] * (comp.nslots - len(env)))
    body(env)
    return {
        name: np.array(a.data[:math.prod(a.given or a.shape)], dtype=DTYPES[a.elem.name]).reshape(a.given or a.shape)
        for name, a in shared.arrays.items() if not a.local
    }


# ---------------------------------------------------------------------------
# Arguments


def _scalar_arg(p: ir.Param, v: object) -> int | float:
    ty = p.ty
    assert isinstance(ty, ir.Scalar)
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise InterpError(p.loc, f"argument '{p.name}' must be a {ty} number, got {type(v).__name__}")
    if ty.is_int:
        if not isinstance(v, (int, np.integer)):
            raise InterpError(p.loc, f"argument '{p.name}' must be an integer ({ty}), got {v!r}")
        iv = int(v)
        if ir.wrap_int(iv, ty) != iv:
            raise InterpError(p.loc, f"argument '{p.name}' = {iv} is out of range of {ty}")
        return iv
    try:
        if isinstance(v, (int, np.integer)):
            return _int_to_f32(int(v)) if ty == ir.F32 else float(int(v))
    except OverflowError:
        raise InterpError(p.loc, f"argument '{p.name}' = {v} is out of range of {ty}") from None
    return _r32(float(v)) if ty == ir.F32 else float(v)


def _extents(comp: _FnCompiler, p: ir.Param, scope: dict[str, _Sym], env: Env) -> tuple[int, ...]:
    assert isinstance(p.ty, ir.ArrayType)
    shape = []
    for d in p.ty.dims:
        if not d.ty.is_int:
            raise InterpError(d.loc or p.loc, f"extent of '{p.name}' has non-integer type {d.ty}")
        n = comp.expr(d, scope)(env)
        if n < 0 and p.pointer:
            n = 0  # a derived extent (the index range the loops reach): negative when they do not run
        elif n < 0:
            raise InterpError(d.loc or p.loc, f"extent of '{p.name}' evaluates to {n} < 0")
        shape.append(n)
    return tuple(shape)


@dataclass(slots=True)
class _Array:
    """An array parameter during execution: a flat list of Python values."""

    name: str
    elem: ir.Scalar
    shape: tuple[int, ...]
    data: list[Any]
    local: bool = False  # a kernel-local array: elements start as None (undefined)
    given: tuple[int, ...] | None = None  # the caller's shape where it differs (a flat pointer argument)


def _array_arg(p: ir.Param, shape: tuple[int, ...], v: object) -> _Array:
    assert isinstance(p.ty, ir.ArrayType)
    elem = p.ty.elem
    if not isinstance(v, np.ndarray):
        raise InterpError(p.loc, f"argument '{p.name}' must be a numpy array, got {type(v).__name__}")
    if v.dtype != DTYPES[elem.name]:
        raise InterpError(p.loc, f"argument '{p.name}' must have dtype {DTYPES[elem.name]} ({elem}), got {v.dtype}")
    # A pointer parameter gets what its C caller passes: a block of memory, of any length (the derived
    # extents bound the accesses, not the caller's buffer: a last row may end early, and rows past the
    # last one touched may follow), flat or viewed as a matrix (the verifier's inputs for delinearize).
    flat = p.pointer and v.shape != shape
    if v.shape != shape and not flat:
        raise InterpError(p.loc, f"argument '{p.name}' must have shape {shape}, got {v.shape}")
    # tolist() copies into exact Python ints/floats (float32 -> double is exact).
    data = v.reshape(-1).tolist()
    if flat:
        data += [None] * (math.prod(shape) - v.size)  # never touched: past every access (if any)
    return _Array(p.name, elem, shape, data, given=v.shape if flat else None)


# ---------------------------------------------------------------------------
# Scalar semantics helpers

_F32 = struct.Struct("f")
_pack32, _unpack32 = _F32.pack, _F32.unpack


def _r32(x: float) -> float:
    """``x`` rounded to single precision (round to nearest even), as a float."""
    try:
        return _unpack32(_pack32(x))[0]
    except OverflowError:  # older Pythons refuse instead of rounding to inf
        return math.copysign(math.inf, x)


def _int_to_f32(v: int) -> float:
    """Integer ``v`` correctly rounded to single precision (no double rounding)."""
    if -(1 << 53) <= v <= 1 << 53:
        return _r32(float(v))
    a = abs(v)
    sh = a.bit_length() - 26
    m = a >> sh
    if a & ((1 << sh) - 1):
        m |= 1  # sticky bit: 26 bits keep the round and sticky information for 24
    r = math.ldexp(_r32(float(m)), sh)
    return -r if v < 0 else r


_NEG_NAN = -math.nan  # x86's default NaN (sign bit set), as 0.0/0.0 produces


def _fdiv0(x: float, y: float) -> float:
    """IEEE ``x / y`` for ``y == ±0`` (Python raises instead)."""
    if x != x:
        return x
    if x == 0:
        return _NEG_NAN
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def _int_range(ty: ir.Scalar) -> tuple[int, int]:
    if ty.is_signed:
        return -(1 << (ty.bits - 1)), (1 << (ty.bits - 1)) - 1
    return 0, (1 << ty.bits) - 1


def _wrap_consts(ty: ir.Scalar) -> tuple[int, int]:
    """(H, M) such that ``((v + H) & M) - H`` wraps ``v`` into ``ty``."""
    return (1 << (ty.bits - 1)) if ty.is_signed else 0, (1 << ty.bits) - 1


def _converter(src: ir.Scalar, dst: ir.Scalar, loc: Loc | None) -> Callable[[Any], Any] | None:
    """A function converting a ``src`` value to ``dst`` with C semantics (None: identity)."""
    if src == dst:
        return None
    if dst.is_int:
        lo, hi = _int_range(dst)
        if src.is_int:
            h, m = _wrap_consts(dst)
            return lambda v: ((v + h) & m) - h

        def f2i(x: float) -> int:
            if x != x or x in (math.inf, -math.inf):
                raise InterpError(loc, f"conversion of {x} to {dst} is undefined")
            t = int(x)  # truncates toward zero
            if not lo <= t <= hi:
                raise InterpError(loc, f"conversion of {x!r} to {dst}: value out of range [{lo}, {hi}]")
            return t

        return f2i
    if src.is_int:
        return _int_to_f32 if dst == ir.F32 else float
    return _r32 if dst == ir.F32 else None  # f32 -> f64 is exact


@cache
def _libm() -> ctypes.CDLL:
    name = ctypes.util.find_library("m")
    assert name is not None, "the C math library (libm) was not found"
    return ctypes.CDLL(name)


@cache
def _math_fn(name: str) -> Callable[..., Any]:
    """The libm function ``name`` (or Python's abs for the integer abs family)."""
    params, ret = ir.MATH_FUNCS[name]
    if ret.is_int:
        h, m = _wrap_consts(ret)
        return lambda v: ((abs(v) + h) & m) - h  # abs(INT_MIN) wraps, as on x86
    ctype = ctypes.c_float if ret == ir.F32 else ctypes.c_double
    fn = getattr(_libm(), name)
    fn.restype = ctype
    fn.argtypes = [ctypes.c_float if p == ir.F32 else ctypes.c_double for p in params]
    return fn


# ---------------------------------------------------------------------------
# The closure compiler


@dataclass(slots=True)
class _Sym:
    """A scalar name in scope: its frame slot, kind and type.

    ``checked`` marks locals declared without an initialiser: reads of those
    test for the uninitialised marker (None).
    """

    slot: int
    kind: str  # "param" | "loop" | "local"
    ty: ir.Scalar
    checked: bool = False


class _Shared:
    """State shared by all function compilers of one ``run``."""

    def __init__(self, module: ir.Module) -> None:
        self.module = module
        self.arrays: dict[str, _Array] = {}
        self.rng: random.Random | None = None  # shuffled mode: the order of par loops
        # name -> one-element holder of the compiled function; the holder is
        # created before compiling the body so recursive calls can refer to it.
        self.funcs: dict[str, list[Callable[..., Any]]] = {}

    def func(self, f: ir.Func) -> list[Callable[..., Any]]:
        holder = self.funcs.get(f.name)
        if holder is None:
            holder = self.funcs[f.name] = []
            holder.append(_compile_func(self, f))
        return holder


def _compile_func(shared: _Shared, f: ir.Func) -> Callable[..., Any]:
    comp = _FnCompiler(shared, ret=f.ret, in_func=True, name=f.name)
    scope: dict[str, _Sym] = {}
    for p in f.params:
        if not isinstance(p.ty, ir.Scalar):
            raise InterpError(p.loc, f"function '{f.name}': array parameter '{p.name}' is not supported")
        scope[p.name] = _Sym(comp.new_slot(), "param", p.ty)
    body = comp.block(f.body, scope)
    pad = [None] * (comp.nslots - len(f.params))
    loc, name, void = f.loc, f.name, f.ret is None

    def invoke(*args: Any) -> Any:
        env = [*args, *pad]
        r = body(env)
        if r is None or r is _VOID:
            if not void:
                raise InterpError(loc, f"function '{name}' reached its end without returning a value")
        return r

    return invoke


def _has_return(stmts: tuple[ir.Stmt, ...]) -> bool:
    return any(isinstance(n, ir.Return) for s in stmts for n in ir.walk(s))


class _FnCompiler:
    """Compiles the body of one kernel or function into closures over a frame."""

    def __init__(self, shared: _Shared, *, ret: ir.Scalar | None, in_func: bool, name: str) -> None:
        self.shared = shared
        self.ret = ret
        self.in_func = in_func
        self.name = name
        self.nslots = 0

    def new_slot(self) -> int:
        self.nslots += 1
        return self.nslots - 1

    # --- statements ----------------------------------------------------------
    #
    # A statement closure returns None when control falls through, otherwise
    # what a ``return`` produced (the value, or _VOID).  Blocks without a
    # Return anywhere inside ignore those results.

    def block(self, stmts: tuple[ir.Stmt, ...], scope: dict[str, _Sym]) -> StmtFn:
        scope = dict(scope)  # Decls are visible for the rest of this block only
        fns = tuple(self.stmt(s, scope) for s in stmts)
        if _has_return(stmts):

            def run_returning(env: Env) -> Any:
                for f in fns:
                    r = f(env)
                    if r is not None:
                        return r
                return None

            return run_returning
        if len(fns) == 1:
            return fns[0]
        if len(fns) == 2:
            f0, f1 = fns

            def run2(env: Env) -> None:
                f0(env)
                f1(env)

            return run2

        def run_all(env: Env) -> None:
            for f in fns:
                f(env)

        return run_all

    def stmt(self, s: ir.Stmt, scope: dict[str, _Sym]) -> StmtFn:
        method = getattr(self, "_s_" + type(s).__name__, None)
        if method is None:
            raise InterpError(s.loc, f"unsupported statement {type(s).__name__}")
        return method(s, scope)

    def _s_Decl(self, s: ir.Decl, scope: dict[str, _Sym]) -> StmtFn:
        slot = self.new_slot()
        if s.init is None:
            scope[s.name] = _Sym(slot, "local", s.ty, checked=True)

            def decl(env: Env) -> None:
                env[slot] = None  # (re-)created uninitialised on every execution

            return decl
        init = self.converted(s.init, s.ty, scope)  # init is compiled before the name is visible
        scope[s.name] = _Sym(slot, "local", s.ty)

        def decl_init(env: Env) -> None:
            env[slot] = init(env)

        return decl_init

    def _s_Assign(self, s: ir.Assign, scope: dict[str, _Sym]) -> StmtFn:
        t = s.target
        if isinstance(t, ir.Var):
            sym = self.lookup(t, scope)
            if sym.kind == "loop":
                raise InterpError(s.loc, f"assignment to loop variable '{t.name}'")
            value = self.converted(s.value, sym.ty, scope)
            slot = sym.slot

            def assign_var(env: Env) -> None:
                env[slot] = value(env)

            return assign_var
        if isinstance(t, ir.Index):
            arr = self.array(t)
            off = self.offset(t, arr, scope)
            value = self.converted(s.value, arr.elem, scope)
            data = arr.data

            def assign_elem(env: Env) -> None:
                data[off(env)] = value(env)

            return assign_elem
        raise InterpError(s.loc, f"cannot assign to {type(t).__name__}")

    def _s_For(self, s: ir.For, scope: dict[str, _Sym]) -> StmtFn:
        for e in (s.lo, s.hi):
            if not e.ty.is_int:
                raise InterpError(e.loc or s.loc, f"loop bound of '{s.var}' has non-integer type {e.ty}")
        if not s.ty.is_int:
            raise InterpError(s.loc, f"loop variable '{s.var}' has non-integer type {s.ty}")
        if s.step == 0:
            raise InterpError(s.loc, f"loop over '{s.var}' has step 0")
        lo, hi, step = self.expr(s.lo, scope), self.expr(s.hi, scope), s.step
        slot = self.new_slot()
        body = self.block(s.body, {**scope, s.var: _Sym(slot, "loop", s.ty)})
        # Bounds are evaluated once, lo first; a downward loop starts at hi - 1.
        if _has_return(s.body):

            def loop_returning(env: Env) -> Any:
                a, b = lo(env), hi(env)
                for v in range(a, b, step) if step > 0 else range(b - 1, a - 1, step):
                    env[slot] = v
                    r = body(env)
                    if r is not None:
                        return r
                return None

            return loop_returning
        rng = self.shared.rng
        if s.reduce and rng is not None:
            return self._reduce_shuffled(s, scope, lo, hi, slot, rng)
        if s.par is not None and rng is not None:

            def loop_shuffled(env: Env) -> None:
                order = list(range(lo(env), hi(env), step) if step > 0 else range(hi(env) - 1, lo(env) - 1, step))
                rng.shuffle(order)
                for v in order:
                    env[slot] = v
                    body(env)

            return loop_shuffled
        if step > 0:

            def loop_up(env: Env) -> None:
                for v in range(lo(env), hi(env), step):
                    env[slot] = v
                    body(env)

            return loop_up

        def loop_down(env: Env) -> None:
            a = lo(env)
            for v in range(hi(env) - 1, a - 1, step):
                env[slot] = v
                body(env)

        return loop_down

    def _reduce_shuffled(self, s: ir.For, scope: dict[str, _Sym], lo: ExprFn, hi: ExprFn, slot: int,
                         rng: random.Random) -> StmtFn:
        """A ``reduce`` loop in shuffled mode: random order, random association, one final update."""
        if len(s.body) == 1 and isinstance(s.body[0], ir.For):
            return self._sweep_shuffled(s, scope, lo, hi, slot, rng)
        if len(s.body) >= 2 and isinstance(s.body[-1], ir.For):
            return self._chain_shuffled(s, scope, lo, hi, slot, rng)
        inner = {**scope, s.var: _Sym(slot, "loop", s.ty)}
        parts: list[tuple[ExprFn, ExprFn, StmtFn, int, int, int]] = []
        for op, c in zip(s.reduce, s.body):
            a = accum.accumulation(c)
            if a is None:
                raise InterpError(c.loc, "the body of a 'reduce' loop must be accumulations 'x = x op e'")
            parts.append(self._accumulation(a, op, scope, inner))
        step = s.step

        def loop_reduce(env: Env) -> None:
            a, b = lo(env), hi(env)
            order = list(range(a, b, step) if step > 0 else range(b - 1, a - 1, step))
            rng.shuffle(order)
            terms: list[list[Any]] = [[] for _ in parts]
            for v in order:
                env[slot] = v
                for k, part in enumerate(parts):
                    terms[k].append(part[0](env))
            for (_, comb, final, pa, pb, pt), xs in zip(parts, terms):
                if not xs:
                    continue
                env[pt] = _random_tree(xs, env, rng, comb, pa, pb)
                final(env)

        return loop_reduce

    def _accumulation(self, a: accum.Accumulation, op: str, scope: dict[str, _Sym], term_scope: dict[str, _Sym]
                      ) -> tuple[ExprFn, ExprFn, StmtFn, int, int, int]:
        """One accumulation of a shuffled reduction: its term (compiled in ``term_scope``), the
        combine ``$a op $b`` and the final update ``X = X op $t`` (in ``scope``), and the slots of
        ``$a``, ``$b`` and ``$t``."""
        ty = a.target.ty
        pa, pb, pt = self.new_slot(), self.new_slot(), self.new_slot()
        # Synthetic names: '$' never appears in a user identifier.
        syms = {"$a": _Sym(pa, "local", ty), "$b": _Sym(pb, "local", ty), "$t": _Sym(pt, "local", ty)}
        comb = self.expr(accum.combine(a, op, ir.Var("$a", ty), ir.Var("$b", ty)), {**scope, **syms})
        final = self.stmt(accum.apply(a, ir.Var("$t", ty)), {**scope, **syms})
        return self.converted(a.term, ty, term_scope), comb, final, pa, pb, pt

    def _sweep_shuffled(self, s: ir.For, scope: dict[str, _Sym], lo: ExprFn, hi: ExprFn, slot: int,
                        rng: random.Random) -> StmtFn:
        """A sweep nest (``reduce`` on a loop around a loop, passes.reduce_gpu rule (d)) in shuffled
        mode: every ``(r, c)`` term in a random order, each accumulator element's terms combined
        along a random tree and applied once (``X[r]`` over the columns, ``Y[c]`` over the rows)."""
        loop = s.body[0]
        assert isinstance(loop, ir.For), s
        outer = {**scope, s.var: _Sym(slot, "loop", s.ty)}
        ilo, ihi = self.expr(loop.lo, outer), self.expr(loop.hi, outer)
        islot = self.new_slot()
        inner = {**outer, loop.var: _Sym(islot, "loop", loop.ty)}
        parts: list[tuple[ExprFn, ExprFn, StmtFn, int, int, int, int]] = []
        maps: list[tuple[int, StmtFn]] = []  # (accumulations before it, M[r][c] = e): run at each point
        point = (ir.Var(s.var, s.ty), ir.Var(loop.var, loop.ty))
        ops = iter(s.reduce)
        for c in loop.body:
            if isinstance(c, ir.Assign) and isinstance(c.target, ir.Index) and c.target.indices == point:
                maps.append((len(parts), self.stmt(c, inner)))
                continue
            op = next(ops, "+")
            a = accum.accumulation(c)
            if a is None or not isinstance(a.target, ir.Index) or not isinstance(a.target.indices[0], ir.Var):
                raise InterpError(c.loc, "the body of a sweep nest must be accumulations 'X[r] = X[r] op e'")
            key = slot if a.target.indices[0].name == s.var else islot
            parts.append((*self._accumulation(a, op, inner, inner), key))

        def sweep_reduce(env: Env) -> None:
            a, b = lo(env), hi(env)
            if a >= b:
                return
            env[slot] = a  # rectangular: the inner bounds do not read the outer variable
            pairs = [(r, c) for r in range(a, b) for c in range(ilo(env), ihi(env))]
            rng.shuffle(pairs)
            terms: list[dict[int, list[Any]]] = [{} for _ in parts]
            for r, c in pairs:
                env[slot], env[islot] = r, c
                m = 0
                for k in range(len(parts) + 1):
                    while m < len(maps) and maps[m][0] == k:  # a point's statements in program order
                        maps[m][1](env)
                        m += 1
                    if k < len(parts):
                        part = parts[k]
                        terms[k].setdefault(r if part[6] == slot else c, []).append(part[0](env))
            for (_, comb, final, pa, pb, pt, key), by_elem in zip(parts, terms):
                for elem, xs in by_elem.items():
                    total = _random_tree(xs, env, rng, comb, pa, pb)
                    env[key] = elem
                    env[pt] = total
                    final(env)

        return sweep_reduce

    def _chain_shuffled(self, s: ir.For, scope: dict[str, _Sym], lo: ExprFn, hi: ExprFn, slot: int,
                        rng: random.Random) -> StmtFn:
        """A chain nest (``reduce`` on a loop around a row and a column loop, passes.reduce_gpu
        rule (e)) in shuffled mode: the rows in a random order, each row's statements and its row
        loop (shuffled by its own mark) run in place, its column terms evaluated then; each ``Y[c]``'s
        terms combined along a random tree and applied once, after every row."""
        cols = s.body[-1]
        assert isinstance(cols, ir.For), s
        outer = {**scope, s.var: _Sym(slot, "loop", s.ty)}
        head = self.block(s.body[:-1], outer)
        clo, chi = self.expr(cols.lo, outer), self.expr(cols.hi, outer)
        cslot = self.new_slot()
        inner = {**outer, cols.var: _Sym(cslot, "loop", cols.ty)}
        parts = []
        for op, c in zip(s.reduce, cols.body):
            a = accum.accumulation(c)
            if a is None:
                raise InterpError(c.loc, "the column loop of a chain nest must be accumulations 'Y[c] = Y[c] op e'")
            parts.append(self._accumulation(a, op, inner, inner))

        def chain_reduce(env: Env) -> None:
            order = list(range(lo(env), hi(env)))
            rng.shuffle(order)
            terms: list[dict[int, list[Any]]] = [{} for _ in parts]
            for r in order:
                env[slot] = r
                head(env)
                cs = list(range(clo(env), chi(env)))
                rng.shuffle(cs)
                for c in cs:
                    env[cslot] = c
                    for k, part in enumerate(parts):
                        terms[k].setdefault(c, []).append(part[0](env))
            for (_, comb, final, pa, pb, pt), by_col in zip(parts, terms):
                for c, xs in by_col.items():
                    env[cslot] = c
                    env[pt] = _random_tree(xs, env, rng, comb, pa, pb)
                    final(env)

        return chain_reduce

    def _s_If(self, s: ir.If, scope: dict[str, _Sym]) -> StmtFn:
        cond = self.expr(s.cond, scope)
        then = self.block(s.then, scope)
        orelse = self.block(s.orelse, scope) if s.orelse else None
        if orelse is None:

            def if_(env: Env) -> Any:
                if cond(env):
                    return then(env)
                return None

            return if_

        def if_else(env: Env) -> Any:
            if cond(env):
                return then(env)
            return orelse(env)

        return if_else

    def _s_Return(self, s: ir.Return, scope: dict[str, _Sym]) -> StmtFn:
        if not self.in_func:
            raise InterpError(s.loc, f"'return' in kernel '{self.name}' (only functions return)")
        if s.value is None:
            if self.ret is not None:
                raise InterpError(s.loc, f"function '{self.name}' must return a {self.ret} value")
            return lambda env: _VOID
        if self.ret is None:
            raise InterpError(s.loc, f"void function '{self.name}' returns a value")
        return self.converted(s.value, self.ret, scope)

    def _s_Trap(self, s: ir.Trap, scope: dict[str, _Sym]) -> StmtFn:
        def trap(env: Env) -> Any:
            raise InterpError(s.loc, f"'{self.name}' stopped: {s.message}")

        return trap

    def _s_Launch(self, s: ir.Launch, scope: dict[str, _Sym]) -> StmtFn:
        # Launches (and the par loops inside) run sequentially: the mapping
        # pass only produces them where that gives the parallel result.
        return self.block(s.body, scope)

    # --- expressions ---------------------------------------------------------

    def expr(self, e: ir.Expr, scope: dict[str, _Sym]) -> ExprFn:
        """The closure evaluating ``e`` in a frame."""
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is None:
            raise InterpError(e.loc, f"unsupported expression {type(e).__name__}")
        return method(e, scope)

    def converted(self, e: ir.Expr, ty: ir.Scalar, scope: dict[str, _Sym]) -> ExprFn:
        """The closure evaluating ``e`` converted to ``ty`` (the IR usually makes this a no-op)."""
        f = self.expr(e, scope)
        conv = _converter(e.ty, ty, e.loc)
        return f if conv is None else (lambda env: conv(f(env)))

    def lookup(self, v: ir.Var, scope: dict[str, _Sym]) -> _Sym:
        sym = scope.get(v.name)
        if sym is None:
            what = "array" if v.name in self.shared.arrays else "unknown variable"
            raise InterpError(v.loc, f"{what} '{v.name}' used as a scalar variable")
        return sym

    def array(self, ix: ir.Index) -> _Array:
        arr = self.shared.arrays.get(ix.array)
        if arr is None:
            raise InterpError(ix.loc, f"unknown array '{ix.array}'")
        if len(ix.indices) != len(arr.shape):
            raise InterpError(ix.loc, f"'{ix.array}' has {len(arr.shape)} dimension(s), indexed with {len(ix.indices)}")
        if ix.ty != arr.elem:
            raise InterpError(ix.loc, f"element of '{ix.array}' is {arr.elem}, not {ix.ty}")
        return arr

    def offset(self, ix: ir.Index, arr: _Array, scope: dict[str, _Sym]) -> ExprFn:
        """The closure computing the flat, bounds-checked offset of ``ix``."""
        for i in ix.indices:
            if not i.ty.is_int:
                raise InterpError(i.loc or ix.loc, f"index into '{ix.array}' has non-integer type {i.ty}")
        idx = [self.expr(i, scope) for i in ix.indices]
        shape, name, loc = arr.shape, arr.name, ix.loc

        def oob(*vals: int) -> InterpError:
            where = "".join(f"[{v}]" for v in vals)
            ext = "".join(f"[{d}]" for d in shape)
            return InterpError(loc, f"index out of bounds: {name}{where} with extents {name}{ext}")

        if len(idx) == 1:
            (i0,), (d0,) = idx, shape

            def off1(env: Env) -> int:
                a = i0(env)
                if 0 <= a < d0:
                    return a
                raise oob(a)

            return off1
        if len(idx) == 2:
            (i0, i1), (d0, d1) = idx, shape

            def off2(env: Env) -> int:
                a, b = i0(env), i1(env)
                if 0 <= a < d0 and 0 <= b < d1:
                    return a * d1 + b
                raise oob(a, b)

            return off2
        if len(idx) == 3:
            (i0, i1, i2), (d0, d1, d2) = idx, shape

            def off3(env: Env) -> int:
                a, b, c = i0(env), i1(env), i2(env)
                if 0 <= a < d0 and 0 <= b < d1 and 0 <= c < d2:
                    return (a * d1 + b) * d2 + c
                raise oob(a, b, c)

            return off3
        pairs = tuple(zip(idx, shape))

        def off_n(env: Env) -> int:
            vals = [f(env) for f, _ in pairs]
            o = 0
            for v, (_, d) in zip(vals, pairs):
                if not 0 <= v < d:
                    raise oob(*vals)
                o = o * d + v
            return o

        return off_n

    def _e_Const(self, e: ir.Const, scope: dict[str, _Sym]) -> ExprFn:
        if e.ty.is_int:
            v: int | float = ir.wrap_int(int(e.value), e.ty)
        else:
            v = _r32(float(e.value)) if e.ty == ir.F32 else float(e.value)
        return lambda env: v

    def _e_Var(self, e: ir.Var, scope: dict[str, _Sym]) -> ExprFn:
        sym = self.lookup(e, scope)
        slot = sym.slot
        if not sym.checked:
            return itemgetter(slot)  # a C-level call: no Python frame per read
        loc, name = e.loc, e.name

        def read_checked(env: Env) -> Any:
            v = env[slot]
            if v is None:
                raise InterpError(loc, f"read of uninitialised local '{name}'")
            return v

        return read_checked

    def _e_Index(self, e: ir.Index, scope: dict[str, _Sym]) -> ExprFn:
        arr = self.array(e)
        off, data = self.offset(e, arr, scope), arr.data
        if not arr.local:
            return lambda env: data[off(env)]

        def read_local(env: Env) -> Any:
            v = data[off(env)]
            if v is None:
                raise InterpError(e.loc, f"read of an undefined element of local array '{e.array}'")
            return v

        return read_local

    def _s_Alloc(self, s: ir.Alloc, scope: dict[str, _Sym]) -> StmtFn:
        # Storage was created on kernel entry (Allocs are top-level only).
        return lambda env: None

    def _e_Cast(self, e: ir.Cast, scope: dict[str, _Sym]) -> ExprFn:
        f = self.expr(e.operand, scope)
        src, dst = e.operand.ty, e.ty
        if src.is_int and dst.is_int and src != dst:
            h, m = _wrap_consts(dst)
            return lambda env: ((f(env) + h) & m) - h
        conv = _converter(src, dst, e.loc)
        return f if conv is None else (lambda env: conv(f(env)))

    def _e_Unary(self, e: ir.Unary, scope: dict[str, _Sym]) -> ExprFn:
        a = self.converted(e.operand, e.ty, scope) if e.op != "!" else self.expr(e.operand, scope)
        t = e.ty
        if e.op == "!":
            return lambda env: 0 if a(env) else 1
        if e.op == "-":
            if t.is_float:
                return lambda env: -a(env)
            h, m = _wrap_consts(t)
            return lambda env: ((h - a(env)) & m) - h
        if e.op == "~" and t.is_int:
            h, m = _wrap_consts(t)
            return lambda env: ((~a(env) + h) & m) - h
        raise InterpError(e.loc, f"unsupported unary operator '{e.op}' on {t}")

    def _e_Select(self, e: ir.Select, scope: dict[str, _Sym]) -> ExprFn:
        c = self.expr(e.cond, scope)
        a, b = self.converted(e.then, e.ty, scope), self.converted(e.orelse, e.ty, scope)
        return lambda env: a(env) if c(env) else b(env)  # only the chosen branch runs

    def _e_Call(self, e: ir.Call, scope: dict[str, _Sym]) -> ExprFn:
        f = self.shared.module.func(e.fn)
        if f is not None:
            if len(e.args) != len(f.params):
                raise InterpError(e.loc, f"'{e.fn}' takes {len(f.params)} argument(s), got {len(e.args)}")
            if f.ret is None:
                raise InterpError(e.loc, f"void function '{e.fn}' used as a value")
            holder = self.shared.func(f)  # raises for array parameters
            ptys = tuple(p.ty for p in f.params if isinstance(p.ty, ir.Scalar))
            fn: Callable[..., Any] = lambda *vals: holder[0](*vals)  # noqa: E731 - late-bound for recursion
            ret_conv = _converter(f.ret, e.ty, e.loc)
        elif e.fn in ir.MATH_FUNCS:
            ptys, ret = ir.MATH_FUNCS[e.fn]
            if len(e.args) != len(ptys):
                raise InterpError(e.loc, f"'{e.fn}' takes {len(ptys)} argument(s), got {len(e.args)}")
            fn = _math_fn(e.fn)
            ret_conv = _converter(ret, e.ty, e.loc)
        else:
            raise InterpError(e.loc, f"call of unknown function '{e.fn}'")
        args = [self.converted(a, t, scope) for a, t in zip(e.args, ptys)]
        if len(args) == 1:
            (a0,) = args
            call = lambda env: fn(a0(env))  # noqa: E731
        elif len(args) == 2:
            a0, a1 = args
            call = lambda env: fn(a0(env), a1(env))  # noqa: E731
        else:
            call = lambda env: fn(*[a(env) for a in args])  # noqa: E731
        return call if ret_conv is None else (lambda env: ret_conv(call(env)))

    def _e_Binary(self, e: ir.Binary, scope: dict[str, _Sym]) -> ExprFn:
        op, loc = e.op, e.loc
        if op in ir.LOGICAL_OPS:
            a, b = self.expr(e.lhs, scope), self.expr(e.rhs, scope)
            if op == "&&":
                return lambda env: 1 if a(env) and b(env) else 0
            return lambda env: 1 if a(env) or b(env) else 0
        if op in ir.COMPARE_OPS:
            t = ir.common_type(e.lhs.ty, e.rhs.ty)
            a, b = self.converted(e.lhs, t, scope), self.converted(e.rhs, t, scope)
            return _COMPARE[op](a, b)
        t = e.ty
        a = self.converted(e.lhs, t, scope)
        if op in ir.SHIFT_OPS:
            if not t.is_int or not e.rhs.ty.is_int:
                raise InterpError(loc, f"shift '{op}' needs integer operands")
            return _shift(op, t, a, self.expr(e.rhs, scope), loc)
        b = self.converted(e.rhs, t, scope)
        if t == ir.F64:
            if op == "/":
                return _fdiv(a, b)
            if op in _FLOAT_ARITH:
                return _FLOAT_ARITH[op](a, b)
        elif t == ir.F32:
            if op == "/":
                d = _fdiv(a, b)
                return lambda env: _r32(d(env))
            if op in _FLOAT_ARITH:
                return _F32_ARITH[op](a, b)
        elif op in ("/", "%"):
            return _int_divmod(op, t, a, b, loc)
        elif op in _INT_ARITH:
            h, m = _wrap_consts(t)
            return _INT_ARITH[op](a, b, h, m)
        elif op in _BITWISE:
            return _BITWISE[op](a, b)
        raise InterpError(loc, f"unsupported operator '{op}' on {t}")


# Operator closure factories.  Bitwise results of in-range operands are in
# range already (Python ints behave as infinite two's complement).
_COMPARE: dict[str, Callable[[ExprFn, ExprFn], ExprFn]] = {
    "<": lambda a, b: lambda env: 1 if a(env) < b(env) else 0,
    "<=": lambda a, b: lambda env: 1 if a(env) <= b(env) else 0,
    ">": lambda a, b: lambda env: 1 if a(env) > b(env) else 0,
    ">=": lambda a, b: lambda env: 1 if a(env) >= b(env) else 0,
    "==": lambda a, b: lambda env: 1 if a(env) == b(env) else 0,
    "!=": lambda a, b: lambda env: 1 if a(env) != b(env) else 0,
}
_FLOAT_ARITH: dict[str, Callable[[ExprFn, ExprFn], ExprFn]] = {
    "+": lambda a, b: lambda env: a(env) + b(env),
    "-": lambda a, b: lambda env: a(env) - b(env),
    "*": lambda a, b: lambda env: a(env) * b(env),
}
_F32_ARITH: dict[str, Callable[[ExprFn, ExprFn], ExprFn]] = {
    "+": lambda a, b: lambda env: _r32(a(env) + b(env)),
    "-": lambda a, b: lambda env: _r32(a(env) - b(env)),
    "*": lambda a, b: lambda env: _r32(a(env) * b(env)),
}
_INT_ARITH: dict[str, Callable[[ExprFn, ExprFn, int, int], ExprFn]] = {
    "+": lambda a, b, h, m: lambda env: ((a(env) + b(env) + h) & m) - h,
    "-": lambda a, b, h, m: lambda env: ((a(env) - b(env) + h) & m) - h,
    "*": lambda a, b, h, m: lambda env: ((a(env) * b(env) + h) & m) - h,
}
_BITWISE: dict[str, Callable[[ExprFn, ExprFn], ExprFn]] = {
    "&": lambda a, b: lambda env: a(env) & b(env),
    "|": lambda a, b: lambda env: a(env) | b(env),
    "^": lambda a, b: lambda env: a(env) ^ b(env),
}


def _random_tree(xs: list[Any], env: Env, rng: random.Random, comb: ExprFn, pa: int, pb: int) -> Any:
    """``xs`` (non-empty; consumed) combined along a random tree: adjacent partials, chosen at
    random, are combined by ``comb`` over the slots ``pa`` and ``pb`` until one is left."""
    while len(xs) > 1:
        i = rng.randrange(len(xs) - 1)
        env[pa], env[pb] = xs[i], xs[i + 1]
        xs[i:i + 2] = [comb(env)]
    return xs[0]


def _fdiv(a: ExprFn, b: ExprFn) -> ExprFn:
    def fdiv(env: Env) -> float:
        x, y = a(env), b(env)
        try:
            return x / y
        except ZeroDivisionError:
            return _fdiv0(x, y)

    return fdiv


def _int_divmod(op: str, t: ir.Scalar, a: ExprFn, b: ExprFn, loc: Loc | None) -> ExprFn:
    lo, hi = _int_range(t)
    what = "division" if op == "/" else "modulo"

    def check(x: int, y: int) -> None:
        if y == 0:
            raise InterpError(loc, f"integer {what} by zero")
        # INT_MIN / -1 overflows; x86 idiv traps (SIGFPE) for both / and %.
        raise InterpError(loc, f"integer {what} overflow: {x} {op} {y} in {t}")

    if op == "/":

        def div(env: Env) -> int:
            x, y = a(env), b(env)
            if y == 0 or (y == -1 and x == lo):
                check(x, y)
            q = abs(x) // abs(y)  # C99: truncate toward zero
            return -q if (x < 0) != (y < 0) else q

        return div

    def mod(env: Env) -> int:
        x, y = a(env), b(env)
        if y == 0 or (y == -1 and x == lo):
            check(x, y)
        r = abs(x) % abs(y)  # the remainder takes the dividend's sign
        return -r if x < 0 else r

    return mod


def _shift(op: str, t: ir.Scalar, a: ExprFn, b: ExprFn, loc: Loc | None) -> ExprFn:
    bits = t.bits
    h, m = _wrap_consts(t)

    def bad(y: int) -> InterpError:
        return InterpError(loc, f"shift amount {y} out of range [0, {bits}) for {t}")

    if op == "<<":

        def shl(env: Env) -> int:
            x, y = a(env), b(env)
            if not 0 <= y < bits:
                raise bad(y)
            return (((x << y) + h) & m) - h

        return shl

    def shr(env: Env) -> int:
        x, y = a(env), b(env)
        if not 0 <= y < bits:
            raise bad(y)
        return x >> y  # arithmetic for negative signed values, as gcc does

    return shr

"""A per-element error bound from the computation itself (issue 38, item 5).

The IR interpreter runs the reference kernel on values that carry, besides the value, a
*magnitude* ``M`` and a *height* ``H`` (:class:`Mag`): ``M`` is the same computation on absolute
values (``|a| + |b|`` for both ``a + b`` and ``a - b``, ``M(a) M(b)`` for ``a * b``,
``(M(a) + |a/b| M(b)) / |b|`` for ``a / b``, ``|f(a)| + |f'(a)| M(a)`` for a math function), and
``H`` the length of the longest chain of floating-point operations behind the value (inputs and
constants 0).  To first order, any evaluation of the same expression DAG in IEEE arithmetic with
unit roundoff ``u`` (any order of a reduction's terms, FMA contraction or not) is within
``2 H u M`` of the exact result: the rounding errors of the operations at one height, weighted
by how much the output depends on them, add up to at most ``M`` (a path crosses each height
once), a product's first-order term is ``|a| M(b) + |b| M(a) <= 2 M(a) M(b)``, and there are
``H`` heights.  The candidate and the reference are two such evaluations, so

    |candidate - reference| <= C_BOUND * H * u * M,  C_BOUND = 8

(2 for the product rule, 2 for two evaluations, 2 for a reassociated reduction whose tree is
taller than the reference's loop and for device math functions within 2 ulp).  A kernel computing
with 38-40-bit mantissas (errors of 2^-38..2^-40, 2^13-2^15 times u), accumulating f64 data in
f32 (2^29 u) or rounding inputs to TF32 is outside it for any height the verifier's shapes reach.

The bound is first order: it does not hold where a discontinuity (a branch on a value, a
conversion to an integer) turns differently under rounding; :func:`prepare` computes it only for
shapes up to :data:`BOUND_WORK` of interpreted work, and the verifier applies it together with
the relative tolerance, never instead of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from transpile import ir
from transpile.ir import interp

C_BOUND = 8.0
"""The constant c of ``|err| <= c * H * u * M`` (see the module docstring for its parts)."""
BOUND_WORK = 1.2e5
"""Shapes up to this much work (``synth.estimate_work``) get the bound (the interpreter with
:class:`Mag` values runs at about 3-5 us an operation)."""
UNIT = {"f64": 2.0**-53, "f32": 2.0**-24}


class Mag:
    """A float value with its magnitude ``m`` and height ``h``; arithmetic as in the docstring."""

    __slots__ = ("h", "m", "v")

    def __init__(self, v: float, m: float, h: int) -> None:
        self.v, self.m, self.h = v, m, h

    # arithmetic ---------------------------------------------------------------
    def __add__(self, o: Any) -> Mag:
        o = _mag(o)
        return Mag(self.v + o.v, self.m + o.m, max(self.h, o.h) + 1)

    __radd__ = __add__

    def __sub__(self, o: Any) -> Mag:
        o = _mag(o)
        return Mag(self.v - o.v, self.m + o.m, max(self.h, o.h) + 1)

    def __rsub__(self, o: Any) -> Mag:
        return _mag(o) - self

    def __mul__(self, o: Any) -> Mag:
        o = _mag(o)
        return Mag(self.v * o.v, self.m * o.m, max(self.h, o.h) + 1)

    __rmul__ = __mul__

    def __truediv__(self, o: Any) -> Mag:
        o = _mag(o)
        if o.v == 0:
            v = interp._fdiv0(self.v, o.v)
            return Mag(v, math.inf, max(self.h, o.h) + 1)
        q = self.v / o.v
        return Mag(q, (self.m + abs(q) * o.m) / abs(o.v), max(self.h, o.h) + 1)

    def __rtruediv__(self, o: Any) -> Mag:
        return _mag(o) / self

    def __neg__(self) -> Mag:
        return Mag(-self.v, self.m, self.h)

    def __pos__(self) -> Mag:
        return self

    def __abs__(self) -> Mag:
        return Mag(abs(self.v), self.m, self.h)

    # comparisons and conversions: by value --------------------------------------
    def __lt__(self, o: Any) -> bool:
        return self.v < _val(o)

    def __le__(self, o: Any) -> bool:
        return self.v <= _val(o)

    def __gt__(self, o: Any) -> bool:
        return self.v > _val(o)

    def __ge__(self, o: Any) -> bool:
        return self.v >= _val(o)

    def __eq__(self, o: object) -> bool:
        return self.v == _val(o)

    def __ne__(self, o: object) -> bool:
        return self.v != _val(o)

    def __hash__(self) -> int:
        return hash(self.v)

    def __bool__(self) -> bool:
        return bool(self.v)

    def __float__(self) -> float:
        return float(self.v)

    def __int__(self) -> int:
        return int(self.v)


def _val(o: Any) -> Any:
    return o.v if isinstance(o, Mag) else o


def _mag(o: Any) -> Mag:
    return o if isinstance(o, Mag) else Mag(float(o), abs(float(o)), 0)


def _r32(x: Any) -> Any:
    if isinstance(x, Mag):
        return Mag(_ORIG_R32(x.v), x.m, x.h + 1)
    return _ORIG_R32(x)


_ORIG_R32: Callable[[float], float] = interp._r32
_ORIG_MATH = interp._math_fn


def _math_fn(name: str) -> Callable[..., Any]:
    """The libm function ``name`` on :class:`Mag` values: the value from libm, the magnitude from
    the derivative (``fmax``/``fmin`` pick their argument; others by a central difference)."""
    fn = _ORIG_MATH(name)
    params, ret = ir.MATH_FUNCS[name]
    if ret.is_int:
        return fn
    if name in ("fmax", "fmaxf", "fmin", "fminf"):
        pick = max if name.startswith("fmax") else min

        def sel(a: Any, b: Any) -> Any:
            if isinstance(a, Mag) or isinstance(b, Mag):
                a, b = _mag(a), _mag(b)
                if math.isnan(a.v):
                    return b
                if math.isnan(b.v):
                    return a
                return a if pick(a.v, b.v) == a.v else b
            return fn(a, b)

        return sel

    def call(*args: Any) -> Any:
        if not any(isinstance(a, Mag) for a in args):
            return fn(*args)
        ms = [_mag(a) for a in args]
        vals = [a.v for a in ms]
        v = fn(*vals)
        m = abs(v)
        for k, a in enumerate(ms):
            if a.m == 0:
                continue
            d = _derivative(fn, vals, k)
            m += d * a.m
        return Mag(v, m if math.isfinite(m) else math.inf, max(a.h for a in ms) + 1)

    return call


def _derivative(fn: Callable[..., float], vals: list[float], k: int) -> float:
    x = vals[k]
    step = 1e-6 * max(abs(x), 1e-300)
    hi, lo = list(vals), list(vals)
    hi[k], lo[k] = x + step, x - step
    try:
        d = abs(fn(*hi) - fn(*lo)) / (2 * step)
    except (OverflowError, ValueError, ZeroDivisionError):
        return math.inf
    return d if math.isfinite(d) else math.inf


def magnitudes(kernel: ir.Kernel, args: dict[str, Any]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``(M, H)`` per float array parameter of ``kernel`` after a run on ``args`` (call in a forked
    child: the interpreter's rounding and math hooks are replaced for the run)."""
    module = ir.Module((), (kernel,))
    interp._r32 = _r32  # type: ignore[assignment]
    interp._math_fn = _math_fn  # type: ignore[assignment]
    shared = interp._Shared(module)
    comp = interp._FnCompiler(shared, ret=None, in_func=False, name=kernel.name)
    scope: dict[str, Any] = {}
    env: list[Any] = []
    for p in kernel.params:
        if isinstance(p.ty, ir.Scalar):
            scope[p.name] = interp._Sym(comp.new_slot(), "param", p.ty)
            v = interp._scalar_arg(p, args[p.name])
            env.append(Mag(float(v), abs(float(v)), 0) if p.ty.is_float else v)
    for p in kernel.params:
        if isinstance(p.ty, ir.ArrayType):
            shape = interp._extents(comp, p, scope, env)
            arr = interp._array_arg(p, shape, args[p.name])
            if p.ty.elem.is_float:
                arr.data = [Mag(x, abs(x), 0) if x is not None else None for x in arr.data]
            shared.arrays[p.name] = arr
    derived = [p.ty for p in kernel.params if p.pointer and isinstance(p.ty, ir.ArrayType)]
    for s in kernel.body:
        if isinstance(s, ir.Alloc):
            shape = interp._extents(comp, ir.Param(s.name, s.ty, pointer=s.ty in derived, loc=s.loc), scope, env)
            shared.arrays[s.name] = interp._Array(s.name, s.ty.elem, shape, [None] * math.prod(shape), local=True)
    body = comp.block(kernel.body, scope)
    env.extend([None] * (comp.nslots - len(env)))
    body(env)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, a in shared.arrays.items():
        if a.local or not a.elem.is_float:
            continue
        n = math.prod(a.given or a.shape)
        vals = [_mag(x) if x is not None else Mag(0.0, 0.0, 0) for x in a.data[:n]]
        shape = a.given or a.shape
        out[name] = (np.array([x.m for x in vals], dtype=np.float64).reshape(shape),
                     np.array([x.h for x in vals], dtype=np.float64).reshape(shape))
    return out


def bounds(kernel: ir.Kernel, sig: Any, args: dict[str, Any], *, timeout: float = 60.0) -> dict[str, np.ndarray] | None:
    """The absolute bound ``C_BOUND * max(H, 1) * u * M`` (plus the output type's smallest subnormal
    times H) per element of every float output, or None where the interpreter cannot run it."""
    from transpile.verify.proc import ChildError, fork_call

    try:
        mh = fork_call(lambda: magnitudes(kernel, args), timeout=timeout, what="the error bound's interpreter run")
    except ChildError:
        return None
    out = {}
    for a in sig.outputs:
        if a.dtype.kind != "f" or a.name not in mh:
            continue
        m, h = mh[a.name]
        kind = "f64" if a.dtype.itemsize >= 8 else "f32"
        tiny = float(np.finfo(a.dtype).smallest_subnormal)
        with np.errstate(over="ignore", invalid="ignore"):
            b = C_BOUND * np.maximum(h, 1.0) * UNIT[kind] * m + tiny * np.maximum(h, 1.0)
        out[a.name] = np.where(np.isnan(b), np.inf, b)
    return out

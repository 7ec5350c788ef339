"""Hypothesis strategy: random affine loop nests, for testing the parallelization passes.

Nests of depth 1-4 with 1-4 statements placed at random levels, rectangular
or triangular bounds, and subscripts ``sum(c_v * v) + k`` with small
coefficients: the inputs on which a dependence analysis is most easily wrong.
Every subscript is offset so that it stays in bounds for any size ``n >= 1``,
so generated kernels run in the interpreter without faults.

:func:`check_case` is the differential property over such a kernel (the
pipeline's output run with its ``par`` loops shuffled equals the input run
sequentially); it needs no pytest, so ``tests/fuzz_passes.py`` runs it alone.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import strategies as st

from transpile import ir, pipeline
from transpile.ir import check as ircheck
from transpile.ir import interp

N = ir.Var("n", ir.I32)
LOOP_VARS = ("i", "j", "k", "l")
MAX_COEF = 2
# A subscript's range over loop variables in [0, n): within [-4*MAX_COEF*n, 4*MAX_COEF*n] + k,
# shifted by OFFSET; every array dimension has extent EXTENT.
OFF_N, OFF_K = 4 * MAX_COEF, 3
EXT_N, EXT_K = 8 * MAX_COEF + 1, 7


def _c(v: int) -> ir.Const:
    return ir.Const(v, ir.I32)


def _lin(a: ir.Expr, b: int, c: ir.Expr) -> ir.Expr:
    return ir.binary("+", ir.binary("*", _c(b), a), c)


OFFSET = _lin(N, OFF_N, _c(OFF_K))
EXTENT = _lin(N, EXT_N, _c(EXT_K))


@st.composite
def subscripts(draw: st.DrawFn, loop_vars: list[str]) -> ir.Expr:
    """``sum(c_v * v) + k + OFFSET`` over the enclosing loop variables."""
    e: ir.Expr = OFFSET
    for v in loop_vars:
        c = draw(st.integers(-MAX_COEF, MAX_COEF))
        if c:
            e = ir.binary("+", e, ir.binary("*", _c(c), ir.Var(v, ir.I32)))
    k = draw(st.integers(-2, 2))
    return ir.binary("+", e, _c(k)) if k else e


@st.composite
def refs(draw: st.DrawFn, loop_vars: list[str], arrays: dict[str, int]) -> ir.Index:
    name = draw(st.sampled_from(sorted(arrays)))
    return ir.Index(name, tuple(draw(subscripts(loop_vars)) for _ in range(arrays[name])), ir.F64)


@st.composite
def statements(draw: st.DrawFn, loop_vars: list[str], arrays: dict[str, int]) -> ir.Stmt:
    target = draw(refs(loop_vars, arrays))
    value: ir.Expr = draw(refs(loop_vars, arrays))
    for _ in range(draw(st.integers(0, 2))):
        op = draw(st.sampled_from(["+", "-", "*"]))
        other = draw(st.one_of(refs(loop_vars, arrays), st.just(ir.Const(0.5, ir.F64))))
        value = ir.binary(op, value, other)
    return ir.assign(target, value)


@st.composite
def nests(draw: st.DrawFn, depth: int, loop_vars: list[str], arrays: dict[str, int]) -> ir.For:
    var = LOOP_VARS[len(loop_vars)]
    inner = loop_vars + [var]
    body: list[ir.Stmt] = [draw(statements(inner, arrays)) for _ in range(draw(st.integers(0, 2)))]
    if depth > 1:
        for _ in range(draw(st.integers(1, 2))):
            body.insert(draw(st.integers(0, len(body))), draw(nests(depth - 1, inner, arrays)))
    if not body:
        body.append(draw(statements(inner, arrays)))
    # Bounds: rectangular [0, n), [1, n), or triangular against an outer variable.
    lo: ir.Expr = _c(draw(st.integers(0, 1)))
    hi: ir.Expr = N
    if loop_vars and draw(st.booleans()):
        outer = ir.Var(draw(st.sampled_from(loop_vars)), ir.I32)
        if draw(st.booleans()):
            hi = outer
        else:
            lo = ir.binary("+", outer, _c(1))
    step = draw(st.sampled_from([1, 1, 1, -1, 2]))
    return ir.For(var, ir.I32, lo, hi, step, tuple(body))


@st.composite
def kernels(draw: st.DrawFn) -> ir.Kernel:
    """A kernel ``affine(n, A, B[, C])`` of 1-3 nests over 1-D and 2-D f64 arrays."""
    arrays = {"A": draw(st.integers(1, 2)), "B": draw(st.integers(1, 2)), "C": draw(st.integers(1, 2))}
    body = tuple(draw(nests(draw(st.integers(1, 4)), [], arrays)) for _ in range(draw(st.integers(1, 2))))
    uses = ir.array_uses(body)
    params = [ir.Param("n", ir.I32)]
    for name in sorted(uses):
        params.append(ir.Param(name, ir.ArrayType(ir.F64, (EXTENT,) * arrays[name]), ir.intent_of(*uses[name])))
    return ir.Kernel("affine", tuple(params), body)


def lower(kernel: ir.Kernel) -> ir.Module:
    """The default pipeline over a one-kernel module."""
    return pipeline.lower(ir.Module((), (kernel,)))


def affine_args(k: ir.Kernel, n: int, seed: int) -> dict[str, object]:
    """Arguments for a generated kernel at size ``n``: random arrays large enough for every subscript."""
    rng = np.random.default_rng(seed)
    ext = EXT_N * n + EXT_K
    args: dict[str, object] = {"n": n}
    for p in k.params:
        if isinstance(p.ty, ir.ArrayType):
            args[p.name] = rng.uniform(-1.0, 1.0, (ext,) * p.ty.rank)
    return args


def same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """The same arrays with bit-identical contents (NaNs equal)."""
    return a.keys() == b.keys() and all(np.array_equal(a[x], b[x], equal_nan=True) for x in a)


def close(a: dict[str, np.ndarray], b: dict[str, np.ndarray], rtol: float = 1e-10) -> bool:
    """The same arrays, equal to ``rtol`` relative to each array's largest magnitude (NaNs equal)."""
    if a.keys() != b.keys():
        return False
    for x in a:
        scale = max(float(np.nanmax(np.abs(b[x]), initial=0.0)), 1e-300)
        if not np.allclose(a[x], b[x], rtol=rtol, atol=rtol * scale, equal_nan=True):
            return False
    return True


def check_case(k: ir.Kernel, n: int, seed: int, lower: Callable[[ir.Kernel], ir.Module] = lower) -> None:
    """One differential case: ``lower(k)`` (default: the whole pipeline), run shuffled in 3
    orders, equals the sequential original."""
    module = ir.Module((), (k,))
    ircheck.check(module)
    mapped = lower(k)
    ircheck.check(mapped)
    args = affine_args(k, n, seed)
    want = interp.run(module, k.name, args)
    # Loops marked reduce are reassociated in shuffled mode: equal to 1e-10
    # relative (issue 3's tolerance); everything else bit for bit.
    reassociated = any(isinstance(x, ir.For) and x.reduce for x in ir.walk(mapped))
    for shuffle in range(3):
        got = interp.run(mapped, k.name, args, shuffle=seed * 7 + shuffle)
        ok = close(got, want) if reassociated else same(got, want)
        assert ok, f"shuffled run {shuffle} differs for n={n}"

"""Reference interpreter: C semantics point by point, faults at their node, and gcc differential tests."""

from __future__ import annotations

import ctypes
import math
import shutil
import struct
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transpile import ir
from transpile.diagnostics import Loc
from transpile.ir import (
    F32,
    F64,
    I8,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    ArrayType,
    Assign,
    Cast,
    Const,
    Decl,
    For,
    Func,
    If,
    Index,
    Kernel,
    Launch,
    Module,
    Param,
    Return,
    Var,
    assign,
    binary,
    cast,
    const,
    interp,
    select,
    unary,
)
from transpile.ir.interp import DTYPES, InterpError

L = Loc("t.ir", 4, 7)
n, m = Var("n", I32), Var("m", I32)
i, j, k = Var("i", I32), Var("j", I32), Var("k", I32)
ZERO, ONE = Const(0, I32), Const(1, I32)


def c(v: int | float, ty: ir.Scalar = I32) -> Const:
    return const(v, ty)


def loop(var: str, lo: ir.Expr, hi: ir.Expr, *body: ir.Stmt, step: int = 1, par: str | None = None) -> For:
    return For(var, I32, lo, hi, step, tuple(body), par)


def arr(name: str, elem: ir.Scalar, *dims: ir.Expr, intent: ir.Intent = "inout", pointer: bool = False,
        loc: Loc | None = None) -> Param:
    return Param(name, ArrayType(elem, tuple(dims)), intent, pointer, loc=loc)


def at(name: str, elem: ir.Scalar, *idx: ir.Expr, loc: Loc | None = None) -> Index:
    return Index(name, tuple(idx), elem, loc=loc)


def fcall(fn: str, *args: ir.Expr, loc: Loc | None = None) -> ir.Call:
    params, ret = ir.MATH_FUNCS[fn]
    return ir.call(fn, tuple(args), params, ret, loc=loc)


def module(params: tuple[Param, ...], *body: ir.Stmt, funcs: tuple[Func, ...] = (), name: str = "k") -> Module:
    return Module(funcs, (Kernel(name, params, tuple(body)),))


def ev(expr: ir.Expr, *, funcs: tuple[Func, ...] = (), **vals: object) -> int | float:
    """Evaluate ``expr`` in a one-statement kernel; its free Vars become scalar params bound to ``vals``."""
    tys = {nd.name: nd.ty for nd in ir.walk(expr) if isinstance(nd, Var)}
    params = tuple(Param(nm, ty) for nm, ty in tys.items()) + (arr("out", expr.ty, ONE, intent="out"),)
    mod = module(params, Assign(at("out", expr.ty, ZERO), expr), funcs=funcs)
    return interp.run(mod, "k", {**vals, "out": np.zeros(1, DTYPES[expr.ty.name])})["out"][0].item()


def raises(mod: Module, args: Mapping[str, object], match: str, loc: Loc | None = L) -> InterpError:
    with pytest.raises(InterpError, match=match) as exc:
        interp.run(mod, "k", args)
    assert exc.value.loc == loc
    if loc is not None:
        assert str(exc.value).startswith(f"{loc}: error: ")
    return exc.value


def bits(x: float) -> str:
    return struct.pack("<d", x).hex()


# ---------------------------------------------------------------------------
# Integer semantics

a32, b32 = Var("a", I32), Var("b", I32)
au, bu = Var("a", U32), Var("b", U32)


@pytest.mark.parametrize(("a", "b", "q", "r"), [(-7, 2, -3, -1), (7, -2, -3, 1), (-7, -2, 3, -1), (7, 2, 3, 1),
                                                 (-1, 5, 0, -1), (-2147483648, 2, -1073741824, 0)])
def test_div_mod_truncate_toward_zero(a: int, b: int, q: int, r: int) -> None:
    assert ev(binary("/", a32, b32), a=a, b=b) == q
    assert ev(binary("%", a32, b32), a=a, b=b) == r
    a64, b64 = Var("a", I64), Var("b", I64)
    assert ev(binary("/", a64, b64), a=a, b=b) == q
    assert ev(binary("%", a64, b64), a=a, b=b) == r


def test_unsigned_wraparound() -> None:
    assert ev(binary("-", au, bu), a=0, b=1) == 4294967295
    assert ev(binary("+", au, bu), a=4294967295, b=1) == 0
    assert ev(binary("*", au, bu), a=65536, b=65537) == 65536
    assert ev(unary("-", au), a=1) == 4294967295
    assert ev(unary("~", au), a=0) == 4294967295
    assert ev(binary("/", au, bu), a=4294967295, b=2) == 2147483647
    # Mixed int/unsigned: -1 converts to UINT_MAX, so the comparison is false.
    assert ev(binary("<", a32, bu), a=-1, b=1) == 0
    u64 = Var("a", U64)
    assert ev(binary("-", u64, c(1, U64)), a=0) == 2**64 - 1


def test_signed_overflow_wraps() -> None:
    assert ev(binary("+", a32, b32), a=2147483647, b=1) == -2147483648
    assert ev(binary("*", a32, b32), a=65536, b=65536) == 0
    assert ev(binary("*", a32, b32), a=123456789, b=1000) == -1097262584
    assert ev(unary("-", a32), a=-2147483648) == -2147483648
    a64 = Var("a", I64)
    assert ev(binary("+", a64, c(1, I64)), a=2**63 - 1) == -(2**63)


def test_small_int_promotion_and_narrowing() -> None:
    a8, b8 = Var("a", U8), Var("b", U8)
    assert ev(binary("+", a8, b8), a=200, b=100) == 300  # promoted to int
    assert ev(cast(binary("+", a8, b8), U8), a=200, b=100) == 44
    assert ev(cast(a32, I8), a=200) == -56
    assert ev(cast(a32, U16), a=-1) == 65535
    assert ev(cast(Var("a", I64), I32), a=2**32 + 5) == 5


def test_shifts() -> None:
    assert ev(binary(">>", a32, b32), a=-8, b=1) == -4  # arithmetic
    assert ev(binary(">>", a32, b32), a=-1, b=31) == -1
    assert ev(binary("<<", a32, b32), a=1, b=31) == -2147483648
    assert ev(binary("<<", a32, b32), a=3, b=31) == -2147483648
    assert ev(binary(">>", au, bu), a=0x80000000, b=31) == 1  # logical
    assert ev(binary("<<", Var("a", I64), b32), a=1, b=40) == 2**40
    assert ev(binary("&", a32, b32), a=-1, b=0xFF) == 0xFF
    assert ev(binary("^", a32, b32), a=-1, b=5) == -6


def test_abs_family() -> None:
    assert ev(fcall("abs", a32), a=-5) == 5
    assert ev(fcall("abs", a32), a=-2147483648) == -2147483648  # wraps, as on x86
    assert ev(fcall("labs", Var("a", I64)), a=-(2**40)) == 2**40


# ---------------------------------------------------------------------------
# Comparisons, logic, select


def test_comparisons_give_i32() -> None:
    x, y = Var("x", F64), Var("y", F64)
    assert ev(binary("<", x, y), x=1.0, y=2.0) == 1
    assert ev(binary(">=", x, y), x=1.0, y=2.0) == 0
    assert ev(binary("==", x, y), x=math.nan, y=math.nan) == 0
    assert ev(binary("!=", x, y), x=math.nan, y=math.nan) == 1
    assert ev(binary("==", x, y), x=0.0, y=-0.0) == 1
    assert ev(unary("!", x), x=math.nan) == 0
    assert ev(unary("!", x), x=-0.0) == 1
    assert binary("<", x, y).ty == I32


def test_short_circuit_and_select_evaluate_lazily() -> None:
    div = binary(">", binary("/", a32, b32), ONE)
    assert ev(binary("&&", binary("!=", b32, ZERO), div), a=7, b=0) == 0
    assert ev(binary("&&", binary("!=", b32, ZERO), div), a=7, b=2) == 1
    assert ev(binary("||", binary("==", b32, ZERO), div), a=7, b=0) == 1
    assert ev(select(b32, binary("/", a32, b32), c(-1)), a=7, b=0) == -1
    assert ev(select(b32, binary("/", a32, b32), c(-1)), a=7, b=2) == 3
    x = Var("x", F64)
    assert ev(binary("&&", x, ONE), x=math.nan) == 1  # NaN is nonzero


# ---------------------------------------------------------------------------
# Conversions


def test_float_to_int_truncates() -> None:
    x = Var("x", F64)
    assert ev(cast(x, I32), x=-2.7) == -2
    assert ev(cast(x, I32), x=2.7) == 2
    assert ev(cast(x, U32), x=-0.5) == 0
    assert ev(cast(x, I64), x=-9.2e18) == -9200000000000000000
    assert ev(cast(x, U64), x=1.8e19) == 18000000000000000000
    assert ev(cast(Var("x", F32), I8), x=-128.9) == -128


def test_int_to_float_rounds_once() -> None:
    # 2**60 + 2**36 + 1 rounds up in float32; via double it would tie and round down.
    v = 2**60 + 2**36 + 1
    expect = float(np.float32(np.int64(v)))
    assert expect != float(np.float32(float(v)))
    assert ev(cast(Var("a", I64), F32), a=v) == expect
    assert ev(cast(Var("a", I64), F32), a=-v) == -expect
    assert ev(cast(Var("a", U64), F32), a=2**64 - 1) == 2.0**64
    assert ev(cast(Var("a", U64), F64), a=2**64 - 1) == 2.0**64
    assert ev(cast(Var("a", I64), F64), a=2**53 + 1) == 2.0**53  # ties to even
    assert ev(cast(a32, F32), a=16777217) == 16777216.0


def test_float_casts_round() -> None:
    x = Var("x", F64)
    assert ev(cast(x, F32), x=0.1) == float(np.float32(0.1))
    assert ev(cast(x, F32), x=1e300) == math.inf
    assert ev(cast(x, F32), x=-1e-50) == 0.0 and math.copysign(1, ev(cast(x, F32), x=-1e-50)) == -1
    assert ev(cast(Var("x", F32), F64), x=np.float32(0.1)) == float(np.float32(0.1))


# ---------------------------------------------------------------------------
# Floating point


def test_f64_division_by_zero_is_ieee() -> None:
    x, y = Var("x", F64), Var("y", F64)
    assert ev(binary("/", x, y), x=1.0, y=0.0) == math.inf
    assert ev(binary("/", x, y), x=1.0, y=-0.0) == -math.inf
    assert ev(binary("/", x, y), x=-3.0, y=0.0) == -math.inf
    assert math.isnan(ev(binary("/", x, y), x=0.0, y=0.0))
    xf, yf = Var("x", F32), Var("y", F32)
    assert ev(binary("/", xf, yf), x=1.0, y=0.0) == math.inf


def test_float32_chain_rounds_every_operation() -> None:
    rng = np.random.default_rng(1)
    x, y, z = (rng.standard_normal(200).astype(np.float32) for _ in range(3))
    X, Y, Z = (at(nm, F32, i) for nm in "xyz")
    s = Var("s", F32)
    expr = binary("-", binary("+", binary("*", X, Y), binary("/", Z, X)), binary("*", c(0.1, F32), Y))
    mod = module((Param("n", I32), arr("x", F32, n, intent="in"), arr("y", F32, n, intent="in"),
                  arr("z", F32, n, intent="in"), arr("o", F32, n, intent="out"), arr("acc", F32, ONE, intent="out")),
                 Decl("s", F32, c(0.0, F32)),
                 loop("i", ZERO, n, assign(at("o", F32, i), expr), assign(s, binary("*", X, Y), "+")),
                 assign(at("acc", F32, ZERO), s))
    out = interp.run(mod, "k", dict(n=200, x=x, y=y, z=z, o=np.zeros(200, np.float32), acc=np.zeros(1, np.float32)))
    with np.errstate(all="ignore"):
        expect = x * y + z / x - np.float32(0.1) * y  # numpy: each op rounded to float32
        in_double = (x.astype(np.float64) * y + z.astype(np.float64) / x - np.float64(np.float32(0.1)) * y)
    acc = np.float32(0.0)
    for a, b in zip(x, y):
        acc = np.float32(acc + a * b)
    assert out["o"].tobytes() == expect.tobytes()
    assert out["acc"][0] == acc
    assert (in_double.astype(np.float32) != expect).any()  # the test would catch double evaluation


def test_math_calls_use_libm() -> None:
    x, y = Var("x", F64), Var("y", F64)
    nan = ev(fcall("sqrt", x), x=-1.0)
    assert math.isnan(nan)
    assert ev(fcall("sqrt", x), x=2.0) == math.sqrt(2.0)
    assert math.isnan(ev(fcall("sqrtf", Var("x", F32)), x=-4.0))
    assert ev(fcall("log", x), x=0.0) == -math.inf  # Python's math.log raises here
    assert ev(fcall("exp", x), x=1000.0) == math.inf
    assert ev(fcall("pow", x, y), x=2.0, y=10.0) == 1024.0
    assert ev(fcall("pow", x, y), x=0.0, y=-1.0) == math.inf
    assert ev(fcall("fmin", x, y), x=math.nan, y=1.0) == 1.0
    assert ev(fcall("fabs", x), x=-3.5) == 3.5
    assert ev(fcall("floor", x), x=-2.5) == -3.0
    assert ev(fcall("ceil", x), x=-2.5) == -2.0
    assert ev(fcall("round", x), x=2.5) == 3.0  # C rounds half away from zero
    assert ev(fcall("tanh", x), x=math.inf) == 1.0
    f = ev(fcall("expf", Var("x", F32)), x=1.0)
    assert f == float(np.float32(f))  # a single-precision result


# ---------------------------------------------------------------------------
# Loops, scopes, functions


def gemm_module() -> Module:
    C = lambda a, b: at("C", F64, a, b)  # noqa: E731
    A, B = at("A", F64, i, k), at("B", F64, k, j)
    nk = Var("nk", I32)
    return module(
        (Param("n", I32), Param("m", I32), Param("nk", I32), Param("alpha", F64), Param("beta", F64),
         arr("C", F64, n, m), arr("A", F64, n, nk, intent="in"), arr("B", F64, nk, m, intent="in")),
        loop("i", ZERO, n,
             loop("j", ZERO, m, assign(C(i, j), Var("beta", F64), "*")),
             loop("k", ZERO, nk,
                  loop("j", ZERO, m, assign(C(i, j), binary("*", binary("*", Var("alpha", F64), A), B), "+")))),
        name="gemm")


def test_gemm_matches_numpy_in_c_order() -> None:
    rng = np.random.default_rng(2)
    ni, nj, nk = 13, 11, 9
    A, B, C = rng.standard_normal((ni, nk)), rng.standard_normal((nk, nj)), rng.standard_normal((ni, nj))
    A0, C0 = A.copy(), C.copy()
    out = interp.run(gemm_module(), "gemm", dict(n=ni, m=nj, nk=nk, alpha=1.5, beta=-0.7, C=C, A=A, B=B))
    expect = C * -0.7
    for ii in range(ni):
        for kk in range(nk):
            expect[ii] += 1.5 * A[ii, kk] * B[kk]  # same order and rounding as the C loop
    assert out["C"].tobytes() == expect.tobytes()
    assert np.array_equal(C, C0) and np.array_equal(A, A0)  # caller's arrays untouched
    assert set(out) == {"A", "B", "C"} and out["A"] is not A


def order_module(lo: ir.Expr, hi: ir.Expr, step: int) -> Module:
    cnt = Var("cnt", I32)
    return module((Param("n", I32), arr("o", I32, c(16), intent="out")),
                  Decl("cnt", I32, ZERO),
                  loop("i", lo, hi, assign(at("o", I32, cnt), i), assign(cnt, ONE, "+"), step=step))


@pytest.mark.parametrize(("lo", "hi", "step", "order"), [
    (2, 11, 3, [2, 5, 8]),
    (1, 8, -2, [7, 5, 3, 1]),   # C: for (i = 7; i >= 1; i -= 2)
    (0, 4, -1, [3, 2, 1, 0]),
    (5, 5, 1, []),
    (5, 2, -1, []),
])
def test_loop_order(lo: int, hi: int, step: int, order: list[int]) -> None:
    out = interp.run(order_module(c(lo), c(hi), step), "k", dict(n=0, o=np.full(16, -1, np.int32)))
    assert out["o"][: len(order)].tolist() == order
    assert (out["o"][len(order):] == -1).all()


def test_downward_loop_recurrence() -> None:
    # for (i = n - 2; i >= 0; i--) x[i] = x[i + 1] + 1;
    mod = module((Param("n", I32), arr("x", I32, n)),
                 loop("i", ZERO, binary("-", n, ONE),
                      assign(at("x", I32, i), binary("+", at("x", I32, binary("+", i, ONE)), ONE)), step=-1))
    out = interp.run(mod, "k", dict(n=6, x=np.zeros(6, np.int32)))
    assert out["x"].tolist() == [5, 4, 3, 2, 1, 0]


def test_triangular_bounds() -> None:
    mod = module((Param("n", I32), arr("A", F64, n, n)),
                 loop("i", ZERO, n, loop("j", ZERO, binary("+", i, ONE), assign(at("A", F64, i, j), c(1.0, F64)))))
    out = interp.run(mod, "k", dict(n=5, A=np.zeros((5, 5))))
    assert np.array_equal(out["A"], np.tril(np.ones((5, 5))))


def test_decl_reinitialised_each_iteration() -> None:
    t = Var("t", F64)
    mod = module((Param("n", I32), arr("A", F64, n, n, intent="in"), arr("s", F64, n, intent="out")),
                 loop("i", ZERO, n,
                      Decl("t", F64, c(0.0, F64)),
                      loop("j", ZERO, n, assign(t, at("A", F64, i, j), "+")),
                      assign(at("s", F64, i), t)))
    A = np.arange(16.0).reshape(4, 4)
    out = interp.run(mod, "k", dict(n=4, A=A, s=np.zeros(4)))
    assert out["s"].tolist() == [6.0, 22.0, 38.0, 54.0]


def test_uninitialised_decl_recreated_each_iteration() -> None:
    # i32 t; if (i == 0) t = 5; o[i] = t;  -- fine at i == 0, t is fresh again at i == 1.
    t = Var("t", I32, loc=L)
    mod = module((Param("n", I32), arr("o", I32, n)),
                 loop("i", ZERO, n, Decl("t", I32), If(binary("==", i, ZERO), (assign(Var("t", I32), c(5)),)),
                      assign(at("o", I32, i), t)))
    assert interp.run(mod, "k", dict(n=1, o=np.zeros(1, np.int32)))["o"].tolist() == [5]
    raises(mod, dict(n=2, o=np.zeros(2, np.int32)), "read of uninitialised local 't'")


def test_helper_funcs() -> None:
    x, lo, hi = Var("x", F64), Var("lo", F64), Var("hi", F64)
    clamp = Func("clamp", (Param("x", F64), Param("lo", F64), Param("hi", F64)), F64,
                 (Return(fcall("fmin", fcall("fmax", x, lo), hi)),))
    # Integer log2 by a loop with an early return; fact by recursion.
    v, r = Var("v", I32), Var("r", I32)
    ilog2 = Func("ilog2", (Param("v", I32),), I32, (
        loop("b", ZERO, c(32), If(binary("<=", v, binary("<<", ONE, Var("b", I32))), (Return(Var("b", I32)),))),
        Return(c(-1))))
    fact = Func("fact", (Param("v", I32),), I64, (
        If(binary("<=", v, ONE), (Return(c(1, I64)),)),
        Return(binary("*", cast(v, I64), ir.Call("fact", (binary("-", v, ONE),), I64))),))
    funcs = (clamp, ilog2, fact)
    call3 = ir.Call("clamp", (Var("a", F64), c(0.0, F64), c(1.0, F64)), F64)
    assert ev(call3, funcs=funcs, a=1.7) == 1.0
    assert ev(call3, funcs=funcs, a=0.25) == 0.25
    assert ev(ir.Call("ilog2", (a32,), I32), funcs=funcs, a=100) == 7
    assert ev(ir.Call("ilog2", (a32,), I32), funcs=funcs, a=2**31 - 1) == -1  # 1 << 31 is negative
    assert ev(ir.Call("fact", (a32,), I64), funcs=funcs, a=20) == math.factorial(20)
    # Scalar parameters are by-value copies.
    bump = Func("bump", (Param("r", I32),), I32, (assign(r, ONE, "+"), Return(r)))
    mod = module((Param("a", I32), arr("o", I32, c(2))),
                 assign(at("o", I32, ZERO), ir.Call("bump", (a32,), I32)), assign(at("o", I32, ONE), a32),
                 funcs=(bump,))
    assert interp.run(mod, "k", dict(a=4, o=np.zeros(2, np.int32)))["o"].tolist() == [5, 4]


def test_par_loops_and_launch_run_sequentially() -> None:
    body = loop("i", ZERO, n, loop("j", ZERO, m, assign(at("A", F64, i, j), cast(binary("+", binary("*", i, m), j), F64)),
                                   par="x"), par="y")
    mod = module((Param("n", I32), Param("m", I32), arr("A", F64, n, m, intent="out")), Launch((body,)))
    out = interp.run(mod, "k", dict(n=3, m=4, A=np.zeros((3, 4))))
    assert np.array_equal(out["A"], np.arange(12.0).reshape(3, 4))


def test_pointer_param_is_flat_and_extents_evaluated_on_entry() -> None:
    mod = module((Param("n", I32), Param("m", I32), arr("A", I64, binary("*", n, m), pointer=True)),
                 loop("i", ZERO, n, loop("j", ZERO, m, assign(at("A", I64, binary("+", binary("*", i, m), j)),
                                                              cast(j, I64)))),
                 assign(n, ONE), assign(at("A", I64, ZERO), cast(binary("*", n, m), I64)))
    out = interp.run(mod, "k", dict(n=2, m=3, A=np.zeros(6, np.int64)))
    assert out["A"].tolist() == [3, 1, 2, 0, 1, 2]
    # A pointer takes any block of memory, as its C caller passes it: a matrix view (the verifier's inputs
    # for a delinearized pointer) comes back in its own shape.
    view = interp.run(mod, "k", dict(n=2, m=3, A=np.zeros((2, 3), np.int64)))
    assert view["A"].shape == (2, 3) and view["A"].ravel().tolist() == [3, 1, 2, 0, 1, 2]


def test_a_negative_derived_pointer_extent_is_empty() -> None:
    # A[i - 1] for i in 1..n-1 derives the extent n - 2: negative for n = 1, where the loop does not run.
    # A pointer's extent is derived, not declared (an array's negative extent stays an error).
    mod = module((Param("n", I32), arr("A", F64, binary("-", n, Const(2, I32)), pointer=True)),
                 loop("i", ONE, binary("-", n, ONE), assign(at("A", F64, binary("-", i, ONE)), Const(1.0, F64))))
    assert interp.run(mod, "k", dict(n=1, A=np.zeros(0)))["A"].shape == (0,)
    flat = module((Param("n", I32), arr("A", F64, binary("-", n, Const(2, I32)))))
    raises(flat, dict(n=1, A=np.zeros(0)), r"extent of 'A' evaluates to -1 < 0", loc=None)


def test_scalar_args_accept_numpy_and_round_to_f32() -> None:
    x = Var("x", F32)
    assert ev(x, x=0.1) == float(np.float32(0.1))
    assert ev(x, x=np.float64(0.1)) == float(np.float32(0.1))
    assert ev(x, x=3) == 3.0
    assert ev(a32, a=np.int64(-3)) == -3
    assert ev(Var("x", F64), x=np.float32(0.5)) == 0.5


# ---------------------------------------------------------------------------
# Runtime faults: message and location


@pytest.mark.parametrize(("build", "vals", "msg"), [
    (lambda: binary("/", a32, b32, loc=L), dict(a=1, b=0), "integer division by zero"),
    (lambda: binary("%", a32, b32, loc=L), dict(a=1, b=0), "integer modulo by zero"),
    (lambda: binary("/", au, bu, loc=L), dict(a=1, b=0), "integer division by zero"),
    (lambda: binary("/", a32, b32, loc=L), dict(a=-2**31, b=-1), r"integer division overflow: -2147483648 / -1"),
    (lambda: binary("%", a32, b32, loc=L), dict(a=-2**31, b=-1), "integer modulo overflow"),
    (lambda: binary("<<", a32, b32, loc=L), dict(a=1, b=32), r"shift amount 32 out of range \[0, 32\) for i32"),
    (lambda: binary(">>", a32, b32, loc=L), dict(a=1, b=-1), r"shift amount -1 out of range"),
    (lambda: binary(">>", Var("a", I64), b32, loc=L), dict(a=1, b=64), r"shift amount 64 out of range \[0, 64\)"),
    (lambda: Cast(Var("x", F64), I32, loc=L), dict(x=math.nan), "conversion of nan to i32 is undefined"),
    (lambda: Cast(Var("x", F64), I32, loc=L), dict(x=-math.inf), "conversion of -inf to i32 is undefined"),
    (lambda: Cast(Var("x", F64), I32, loc=L), dict(x=3e9), r"conversion of 3000000000.0 to i32: value out of range"),
    (lambda: Cast(Var("x", F64), U32, loc=L), dict(x=-1.0), r"conversion of -1.0 to u32: value out of range"),
    (lambda: Cast(Var("x", F32), I8, loc=L), dict(x=128.0), r"to i8: value out of range \[-128, 127\]"),
])
def test_runtime_faults(build: Callable[[], ir.Expr], vals: dict[str, Any], msg: str) -> None:
    with pytest.raises(InterpError, match=msg) as exc:
        ev(build(), **vals)
    assert exc.value.loc == L
    assert str(exc.value).startswith("t.ir:4:7: error: ")


def test_out_of_bounds_reports_array_indices_and_extents() -> None:
    mod = module((Param("n", I32), arr("x", I32, n)),
                 loop("i", ZERO, n, assign(at("x", I32, i), at("x", I32, binary("+", i, ONE), loc=L))))
    raises(mod, dict(n=4, x=np.zeros(4, np.int32)), r"index out of bounds: x\[4\] with extents x\[4\]")
    mod2 = module((Param("n", I32), arr("A", F64, n, c(3))),
                  loop("i", ZERO, n, Assign(at("A", F64, i, binary("-", i, ONE), loc=L), c(1.0, F64))))
    raises(mod2, dict(n=2, A=np.zeros((2, 3))), r"index out of bounds: A\[0\]\[-1\] with extents A\[2\]\[3\]")
    mod3 = module((arr("B", U8, c(2), c(2), c(2)),), Assign(at("B", U8, ONE, c(2), ZERO, loc=L), c(1, U8)))
    raises(mod3, dict(B=np.zeros((2, 2, 2), np.uint8)), r"B\[1\]\[2\]\[0\] with extents B\[2\]\[2\]\[2\]")


def test_uninitialised_read() -> None:
    mod = module((arr("o", F64, ONE),), Decl("t", F64), Assign(at("o", F64, ZERO), Var("t", F64, loc=L)))
    raises(mod, dict(o=np.zeros(1)), "read of uninitialised local 't'")


def test_func_falling_off_its_end() -> None:
    v = Var("v", I32)
    f = Func("pos", (Param("v", I32),), I32, (If(binary(">", v, ZERO), (Return(v),)),), loc=L)
    assert ev(ir.Call("pos", (a32,), I32), funcs=(f,), a=3) == 3
    with pytest.raises(InterpError, match="function 'pos' reached its end without returning a value") as exc:
        ev(ir.Call("pos", (a32,), I32), funcs=(f,), a=-3)
    assert exc.value.loc == L


def test_bad_arguments() -> None:
    params = (Param("n", I32, loc=L), Param("x", F64, loc=L), arr("A", F32, n, c(2), loc=L))
    mod = module(params)
    good = dict(n=3, x=1.0, A=np.zeros((3, 2), np.float32))
    interp.run(mod, "k", good)
    raises(mod, {**good, "A": np.zeros((3, 2))}, r"'A' must have dtype float32 \(f32\), got float64")
    raises(mod, {**good, "A": np.zeros((2, 3), np.float32)}, r"'A' must have shape \(3, 2\), got \(2, 3\)")
    raises(mod, {**good, "A": [[0.0] * 2] * 3}, "'A' must be a numpy array, got list")
    raises(mod, {**good, "n": 2.0}, "'n' must be an integer")
    raises(mod, {**good, "n": 2**31}, "'n' = 2147483648 is out of range of i32")
    raises(mod, {**good, "n": True}, "'n' must be a i32 number")
    raises(mod, {**good, "x": "1"}, "'x' must be a f64 number, got str")
    raises(mod, {k: v for k, v in good.items() if k != "x"}, "missing argument for parameter 'x'")
    raises(mod, {**good, "y": 1}, "kernel 'k' has no parameter 'y'", loc=None)
    raises(mod, {**good, "n": -1}, "extent of 'A' evaluates to -1")
    with pytest.raises(InterpError, match="no kernel named 'nope'"):
        interp.run(mod, "nope", good)


def test_invalid_ir_is_reported() -> None:
    raises(module((arr("o", I32, ONE),), Assign(at("o", I32, ZERO), Var("zz", I32, loc=L))), dict(o=np.zeros(1, np.int32)),
           "unknown variable 'zz'")
    raises(module((arr("o", I32, ONE),), Assign(at("o", I32, ZERO), ir.Call("nofn", (), I32, loc=L))),
           dict(o=np.zeros(1, np.int32)), "call of unknown function 'nofn'")
    raises(module((arr("o", I32, ONE),), Return(ZERO, loc=L)), dict(o=np.zeros(1, np.int32)), "'return' in kernel 'k'")


# ---------------------------------------------------------------------------
# Differential tests against gcc-compiled C

C_SRC = r"""
#include <math.h>
void f32k(int n, const float *x, const float *y, float *o, float *acc) {
  float s = 0.0f;
  for (int i = 0; i < n; i++) {
    float t = x[i] * y[i] + x[i] / y[i] - 0.5f * y[i];
    o[i] = t + expf(x[i] * 0.25f) + sqrtf(fabsf(y[i]));
    s += t;
  }
  acc[0] = s;
}
void intk(int n, const int *a, const int *b, int *q, int *r, int *s) {
  for (int i = 0; i < n; i++) {
    q[i] = a[i] / b[i];
    r[i] = a[i] % b[i];
    s[i] = (a[i] >> (b[i] & 31)) ^ (int)((unsigned)a[i] * (unsigned)b[i]);
  }
}
void uk(int n, const unsigned *a, const unsigned *b, unsigned *o, unsigned *p) {
  for (int i = 0; i < n; i++) {
    o[i] = (a[i] * b[i] - (a[i] >> 3)) + (b[i] << 5);
    p[i] = (a[i] / (b[i] | 1u)) ^ (a[i] % (b[i] | 1u));
  }
}
void chark(int n, const signed char *c, const unsigned char *u, signed char *o, unsigned short *w) {
  for (int i = n - 1; i >= 0; i--) {
    o[i] = c[i] * c[i] + u[i];
    w[i] = u[i] * 300 - c[i];
  }
}
void dk(int n, const double *x, double *o, long *l, float *f) {
  for (int i = 0; i < n; i++) {
    double v = x[i];
    o[i] = sqrt(v) + pow(v, 1.5) + exp(-v) / (1.0 + v * v);
    l[i] = (long)(v * 1000.0) / 7;
    f[i] = (float)v * 3.0f;
  }
}
void cvk(int n, const long *a, const unsigned long *u, float *fa, float *fu, double *du) {
  for (int i = 0; i < n; i++) {
    fa[i] = a[i];
    fu[i] = u[i];
    du[i] = u[i] + 0.5;
  }
}
"""


def ptr(name: str, elem: ir.Scalar, intent: ir.Intent = "in", ext: ir.Expr = n) -> Param:
    return arr(name, elem, ext, intent=intent, pointer=True)


def diff_module() -> Module:
    def x(nm: str, ty: ir.Scalar) -> Index:
        return at(nm, ty, i)

    def kern(name: str, params: tuple[Param, ...], *body: ir.Stmt) -> Kernel:
        return Kernel(name, (Param("n", I32), *params), tuple(body))

    X, Y, T, S = x("x", F32), x("y", F32), Var("t", F32), Var("s", F32)
    f32k = kern("f32k", (ptr("x", F32), ptr("y", F32), ptr("o", F32, "out"), ptr("acc", F32, "out", ONE)),
                Decl("s", F32, c(0.0, F32)),
                loop("i", ZERO, n,
                     Decl("t", F32, binary("-", binary("+", binary("*", X, Y), binary("/", X, Y)),
                                           binary("*", c(0.5, F32), Y))),
                     assign(x("o", F32), binary("+", binary("+", T, fcall("expf", binary("*", X, c(0.25, F32)))),
                                                fcall("sqrtf", fcall("fabsf", Y)))),
                     assign(S, T, "+")),
                assign(at("acc", F32, ZERO), S))
    A, B = x("a", I32), x("b", I32)
    intk = kern("intk", (ptr("a", I32), ptr("b", I32), ptr("q", I32, "out"), ptr("r", I32, "out"), ptr("s", I32, "out")),
                loop("i", ZERO, n,
                     assign(x("q", I32), binary("/", A, B)),
                     assign(x("r", I32), binary("%", A, B)),
                     assign(x("s", I32), binary("^", binary(">>", A, binary("&", B, c(31))),
                                                cast(binary("*", cast(A, U32), cast(B, U32)), I32)))))
    UA, UB = x("a", U32), x("b", U32)
    ub1 = binary("|", UB, c(1, U32))
    uk = kern("uk", (ptr("a", U32), ptr("b", U32), ptr("o", U32, "out"), ptr("p", U32, "out")),
              loop("i", ZERO, n,
                   assign(x("o", U32), binary("+", binary("-", binary("*", UA, UB), binary(">>", UA, c(3))),
                                              binary("<<", UB, c(5)))),
                   assign(x("p", U32), binary("^", binary("/", UA, ub1), binary("%", UA, ub1)))))
    C8, U8v = x("c", I8), x("u", U8)
    chark = kern("chark", (ptr("c", I8), ptr("u", U8), ptr("o", I8, "out"), ptr("w", U16, "out")),
                 loop("i", ZERO, n,
                      assign(x("o", I8), binary("+", binary("*", C8, C8), U8v)),
                      assign(x("w", U16), binary("-", binary("*", U8v, c(300)), C8)), step=-1))
    V = Var("v", F64)
    dk = kern("dk", (ptr("x", F64), ptr("o", F64, "out"), ptr("l", I64, "out"), ptr("f", F32, "out")),
              loop("i", ZERO, n,
                   Decl("v", F64, x("x", F64)),
                   assign(x("o", F64), binary("+", binary("+", fcall("sqrt", V), fcall("pow", V, c(1.5, F64))),
                                              binary("/", fcall("exp", unary("-", V)),
                                                     binary("+", c(1.0, F64), binary("*", V, V))))),
                   assign(x("l", I64), binary("/", cast(binary("*", V, c(1000.0, F64)), I64), c(7))),
                   assign(x("f", F32), binary("*", cast(V, F32), c(3.0, F32)))))
    cvk = kern("cvk", (ptr("a", I64), ptr("u", U64), ptr("fa", F32, "out"), ptr("fu", F32, "out"),
                       ptr("du", F64, "out")),
               loop("i", ZERO, n,
                    assign(x("fa", F32), x("a", I64)),
                    assign(x("fu", F32), x("u", U64)),
                    assign(x("du", F64), binary("+", x("u", U64), c(0.5, F64)))))
    return Module((), (f32k, intk, uk, chark, dk, cvk))


DIFF = diff_module()


@pytest.fixture(scope="module")
def clib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not available")
    d = tmp_path_factory.mktemp("clib")
    (d / "k.c").write_text(C_SRC)
    subprocess.run(["gcc", "-O2", "-std=c99", "-ffp-contract=off", "-shared", "-fPIC", "-o", str(d / "k.so"),
                    str(d / "k.c"), "-lm"], check=True)
    return ctypes.CDLL(str(d / "k.so"))


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit-identical, except that any NaN matches any NaN (payloads are not part of the contract)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind == "f":
        both_nan = np.isnan(a) & np.isnan(b)
        return bool(((a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}")) | both_nan).all())
    return bool((a == b).all())


def check_vs_gcc(lib: ctypes.CDLL, name: str, ins: dict[str, np.ndarray]) -> None:
    kern = next(kk for kk in DIFF.kernels if kk.name == name)
    size = len(next(iter(ins.values())))
    args: dict[str, object] = {"n": size}
    for p in kern.params[1:]:
        assert isinstance(p.ty, ArrayType)
        shape = (1,) if p.ty.dims == (ONE,) else (size,)
        args[p.name] = ins[p.name] if p.name in ins else np.zeros(shape, DTYPES[p.ty.elem.name])
    got = interp.run(DIFF, name, args)
    bufs = {nm: np.ascontiguousarray(v).copy() for nm, v in args.items() if isinstance(v, np.ndarray)}
    getattr(lib, name)(ctypes.c_int(size), *(ctypes.c_void_p(b.ctypes.data) for b in bufs.values()))
    for nm, b in bufs.items():
        assert same(got[nm], b), (nm, args, got[nm], b)


def arrays(dtype: type, elems: st.SearchStrategy[object], count: int) -> st.SearchStrategy[list[np.ndarray]]:
    return st.lists(st.tuples(*[elems] * count), min_size=1, max_size=12).map(
        lambda rows: [np.array(col, dtype=dtype) for col in zip(*rows)])


f32s = st.floats(width=32, allow_nan=True, allow_infinity=True)
i32s = st.integers(-(2**31), 2**31 - 1)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float32, f32s, 2))
def test_gcc_float32(clib: ctypes.CDLL, xy: list[np.ndarray]) -> None:
    check_vs_gcc(clib, "f32k", dict(x=xy[0], y=xy[1]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(i32s, i32s | st.integers(-40, 40)).filter(
    lambda ab: ab[1] != 0 and not (ab[0] == -(2**31) and ab[1] == -1)), min_size=1, max_size=12))
def test_gcc_int_div_mod(clib: ctypes.CDLL, ab: list[tuple[int, int]]) -> None:
    a, b = (np.array(col, dtype=np.int32) for col in zip(*ab))
    check_vs_gcc(clib, "intk", dict(a=a, b=b))


@settings(max_examples=40, deadline=None)
@given(arrays(np.uint32, st.integers(0, 2**32 - 1), 2))
def test_gcc_unsigned(clib: ctypes.CDLL, ab: list[np.ndarray]) -> None:
    check_vs_gcc(clib, "uk", dict(a=ab[0], b=ab[1]))


def test_gcc_small_ints_downward(clib: ctypes.CDLL) -> None:
    c8 = np.arange(-128, 128, dtype=np.int8)
    u8 = np.arange(256, dtype=np.uint8)[::-1].copy()
    check_vs_gcc(clib, "chark", dict(c=c8, u=u8))


def test_gcc_double_math(clib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.standard_normal(50) * 100, rng.random(50) * 1e5,
                        [0.0, -0.0, 1e-310, 0.5, -1.0, 700.0, -745.0, 1e12]])
    check_vs_gcc(clib, "dk", dict(x=x))


def test_gcc_int_to_float(clib: ctypes.CDLL) -> None:
    rng = np.random.default_rng(4)
    a = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64),
                        np.array([2**60 + 2**36 + 1, -(2**63), 2**63 - 1, 2**24 + 1, 0], dtype=np.int64)])
    u = a.view(np.uint64).copy()
    u[-1] = 2**64 - 1
    check_vs_gcc(clib, "cvk", dict(a=a, u=u))


def test_huge_int_for_float_param() -> None:
    raises(module((Param("x", F64, loc=L),)), dict(x=2**1100), "'x' = .* is out of range of f64")


def test_local_array_is_scratch_and_undefined_until_written() -> None:
    n_ = ir.Var("n", ir.I32)
    i_ = ir.Var("i", ir.I32)
    z = ir.Alloc("z", ir.ArrayType(ir.F64, (n_,)))
    zi = ir.Index("z", (i_,), ir.F64)
    xi = ir.Index("x", (i_,), ir.F64)
    params = (ir.Param("n", ir.I32), ir.Param("x", ir.ArrayType(ir.F64, (n_,)), "inout"))
    fill = ir.For("i", ir.I32, ir.Const(0, ir.I32), n_, 1, (ir.assign(zi, ir.binary("*", xi, ir.Const(2.0, ir.F64))),))
    back = ir.For("i", ir.I32, ir.Const(0, ir.I32), n_, -1, (ir.assign(xi, zi, "+"),))
    ok = ir.Module((), (ir.Kernel("k", params, (z, fill, back)),))
    out = interp.run(ok, "k", {"n": 3, "x": np.array([1.0, 2.0, 3.0])})
    assert set(out) == {"x"}
    assert out["x"].tolist() == [3.0, 6.0, 9.0]
    bad_read = ir.Index("z", (i_,), ir.F64, loc=Loc("t.ir", 4, 9))
    bad = ir.Module((), (ir.Kernel("k", params, (z, ir.For("i", ir.I32, ir.Const(0, ir.I32), n_, 1,
                                                            (ir.assign(xi, bad_read),)))),))
    with pytest.raises(interp.InterpError, match="undefined element of local array 'z'") as e:
        interp.run(bad, "k", {"n": 3, "x": np.zeros(3)})
    assert str(e.value).startswith("t.ir:4:9:")


def test_trap_stops_with_a_located_error() -> None:
    """A reached ``trap`` raises at its node, naming the kernel; one not reached changes nothing."""
    from transpile.ir import text

    m = text.parse("kernel k(i32 n, inout f64 x[n]) {\n  if (n > 2) {\n    trap \"n too large\";\n  }\n"
                   "  for i in 0..n {\n    x[i] = 1.0;\n  }\n}\n", "t.ir")
    assert interp.run(m, "k", {"n": 2, "x": np.zeros(2)})["x"].tolist() == [1.0, 1.0]
    with pytest.raises(InterpError) as e:
        interp.run(m, "k", {"n": 3, "x": np.zeros(3)})
    assert str(e.value).startswith("t.ir:3:5: error: 'k' stopped: n too large"), str(e.value)

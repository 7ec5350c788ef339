"""Tests of the IR text form: parser, printer, diagnostics and the round trip ``parse(show(m)) == m``."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import strategies
from transpile import ir
from transpile.diagnostics import Loc, TranspileError
from transpile.ir import check as ircheck
from transpile.ir import interp, text

IR_DIR = Path(__file__).parent / "ir"
SAMPLES = sorted(IR_DIR.glob("*.ir"))


def kernel_of(src: str) -> ir.Kernel:
    return text.parse(src).kernels[0]


def expr_of(e: str) -> ir.Expr:
    """The expression ``e`` in a kernel with scalars a b c (i32) l (i64) u (u32) x (f32) y z (f64)."""
    k = kernel_of("kernel k(i32 a, i32 b, i32 c, i64 l, u32 u, f32 x, f64 y, f64 z, in f64 A[a][b], "
                  f"out f64 R[1]) {{\n  R[0] = f64({e});\n}}")
    s = k.body[0]
    assert isinstance(s, ir.Assign) and isinstance(s.value, ir.Cast)
    return s.value.operand


# ---------------------------------------------------------------------------
# Canonical texts: show(parse(t)) == t and parse(show(m)) == m

CANONICAL = [
    """\
kernel gemm(i32 ni, i32 nj, i32 nk, f64 alpha, f64 beta, inout f64 C[ni][nj], in f64 A[ni][nk],
            in f64 B[nk][nj]) {
  for i in 0..ni {
    for j in 0..nj {
      C[i][j] *= beta;
    }
    for k in 0..nk {
      for j in 0..nj {
        C[i][j] += alpha * A[i][k] * B[k][j];
      }
    }
  }
}
""",
    """\
func clamp(f64 x, f64 lo, f64 hi) -> f64 {
  return fmin(fmax(x, lo), hi);
}

func noop(i32 a) {
  return;
}

kernel k(i32 n, f32 s, inout f32* P[n * 2], out i64 Q[n + 1][3]) {
  f64 t;
  t = clamp(f64(s), 0.0, 1.0);
  for i: i64 in i64(0)..i64(n) step -2 {
    P[i] = f32(t) - s;
  }
  for j in 0..n step 3 {
    if (j % 2 == 0) {
      Q[j][0] = 1L;
    } else if (j > 4 && !(j < 8)) {
      Q[j][1] = -9223372036854775808L;
    } else {
      Q[j][2] = i64(-2147483648) << 3;
    }
  }
  launch {
    for i in 0..n par(y) {
      for j in 0..2 par(x) {
        P[i * 2 + j] += 1.5f;
      }
    }
    P[0] = P[0] < 0.0f ? -P[0] : P[0];
  }
}
""",
    """\
kernel empty() {}
""",
    """\
kernel names(i32 step, in f64 in[step], out f64 out[step]) {
  f64 z[step + 1][2];
  f64 kernel = 0.0;
  for par in 0..step {
    z[par][0] = in[par];
    kernel += z[par][0];
  }
  for func in 0..step step -1 {
    out[func] = kernel + z[func][0];
  }
}
""",
    """\
kernel stop(i32 n, i32 inc, inout f64 x[n]) {
  if (0 < n && inc <= 0) {
    trap "step 'inc' \\"not\\" > 0 \\\\ C";
  }
  for i in 0..n {
    x[i] = 0.0;
  }
  trap "";
}
""",
    """\
kernel lits(out f64 D[2], out f32 F[2], out u64 U[2], out u32 V[2]) {
  D[0] = 1e-05 + 1e+100 + 0.1 + 1e999 - -1e999 + -0.0;
  F[0] = 0.1f + 1e+10f + 3.4028235e+38f + 1.0f - 1e-45f;
  U[0] = 18446744073709551615uL;
  V[0] = 4294967295u ^ ~0u;
}
""",
]


@pytest.mark.parametrize("src", CANONICAL)
def test_canonical_text_round_trips(src: str) -> None:
    m = text.parse(src, "canon.ir")
    ircheck.check(m)
    assert text.show(m) == src
    assert text.parse(text.show(m)) == m


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_files(path: Path) -> None:
    src = path.read_text()
    m = text.parse(src, str(path))
    ircheck.check(m)
    shown = text.show(m)
    assert text.parse(shown) == m
    assert text.show(text.parse(shown)) == shown


def test_samples_exist() -> None:
    assert {p.name for p in SAMPLES} >= {"gemm.ir", "jacobi2d.ir", "backsolve.ir", "helpers.ir"}


def test_gemm_sample_computes_gemm() -> None:
    m = text.parse((IR_DIR / "gemm.ir").read_text())
    rng = np.random.default_rng(0)
    A, B, C = rng.normal(size=(3, 4)), rng.normal(size=(4, 5)), rng.normal(size=(3, 5))
    out = interp.run(m, "gemm", dict(ni=3, nj=5, nk=4, alpha=1.5, beta=0.5, A=A, B=B, C=C))
    np.testing.assert_allclose(out["C"], 1.5 * A @ B + 0.5 * C)


def test_backsolve_sample_solves() -> None:
    m = text.parse((IR_DIR / "backsolve.ir").read_text())
    rng = np.random.default_rng(1)
    U = np.triu(rng.normal(size=(5, 5))) + 5 * np.eye(5)
    b = rng.normal(size=5)
    out = interp.run(m, "backsolve", dict(n=5, U=U, b=b, x=np.zeros(5)))
    np.testing.assert_allclose(U @ out["x"], b)


def test_show_kernel_and_func_alone() -> None:
    m = text.parse(CANONICAL[1])
    assert text.show(m.funcs[0]) == "func clamp(f64 x, f64 lo, f64 hi) -> f64 {\n  return fmin(fmax(x, lo), hi);\n}\n"
    assert text.show(text.parse(CANONICAL[2]).kernels[0]) == CANONICAL[2]
    assert text.show(ir.Module((), ())) == ""


def test_parse_kernel() -> None:
    k = text.parse_kernel(CANONICAL[0])
    assert k.name == "gemm"
    with pytest.raises(TranspileError, match="exactly one kernel"):
        text.parse_kernel(CANONICAL[1])


# ---------------------------------------------------------------------------
# Typing: the parser inserts C's implicit conversions with the ir.py builders


def test_literal_types() -> None:
    cases = {
        "1": ir.Const(1, ir.I32), "2147483647": ir.Const(2147483647, ir.I32),
        "2147483648": ir.Const(2147483648, ir.I64), "-2147483648": ir.Const(-2147483648, ir.I32),
        "-2147483649": ir.Const(-2147483649, ir.I64), "-(2147483648)": ir.Const(-2147483648, ir.I64),
        "1u": ir.Const(1, ir.U32), "4294967296u": ir.Const(4294967296, ir.U64), "1L": ir.Const(1, ir.I64),
        "1ll": ir.Const(1, ir.I64), "1uL": ir.Const(1, ir.U64), "1LU": ir.Const(1, ir.U64),
        "0x7fffffff": ir.Const(2**31 - 1, ir.I32), "0x80000000": ir.Const(2**31, ir.U32), "010": ir.Const(8, ir.I32),
        "-1u": ir.Const(2**32 - 1, ir.U32), "1.0": ir.Const(1.0, ir.F64), "1.": ir.Const(1.0, ir.F64),
        ".5": ir.Const(0.5, ir.F64), "2.5e-3": ir.Const(2.5e-3, ir.F64), "1e3": ir.Const(1000.0, ir.F64),
        "0.1f": ir.Const(float(np.float32(0.1)), ir.F32), "1e999": ir.Const(math.inf, ir.F64),
    }
    for src, want in cases.items():
        got = expr_of(src)
        assert got == want and type(got.value) is type(want.value), (src, got)


def test_implicit_casts_match_builders() -> None:
    a, x, y, u, lv = (ir.Var("a", ir.I32), ir.Var("x", ir.F32), ir.Var("y", ir.F64), ir.Var("u", ir.U32),
                      ir.Var("l", ir.I64))
    assert expr_of("a + x") == ir.binary("+", a, x)
    assert expr_of("a + x") == ir.Binary("+", ir.Cast(a, ir.F32), x, ir.F32)
    assert expr_of("a < u") == ir.Binary("<", ir.Cast(a, ir.U32), u, ir.I32)
    assert expr_of("u << l") == ir.Binary("<<", u, lv, ir.U32)
    assert expr_of("sqrtf(a)") == ir.Call("sqrtf", (ir.Cast(a, ir.F32),), ir.F32)
    assert expr_of("sqrt(x)") == ir.Call("sqrt", (ir.Cast(x, ir.F64),), ir.F64)
    assert expr_of("a ? x : l") == ir.select(a, x, lv)
    assert expr_of("-a") == ir.Unary("-", a, ir.I32)
    assert expr_of("-3") == ir.Const(-3, ir.I32)
    assert expr_of("!y") == ir.Unary("!", y, ir.I32)
    # Explicit casts are always nodes, even to the operand's own type, so they round-trip.
    assert expr_of("f64(y)") == ir.Cast(y, ir.F64)
    assert expr_of("(f32) y * 2") == ir.binary("*", ir.Cast(y, ir.F32), ir.const(2, ir.I32))


def test_statements_use_builders() -> None:
    k = kernel_of("kernel k(i32 n, f32 s, inout i32 A[n]) {\n  f64 t = n;\n  A[0] += s;\n  n <<= 2;\n}")
    n, s = ir.Var("n", ir.I32), ir.Var("s", ir.F32)
    a0 = ir.Index("A", (ir.Const(0, ir.I32),), ir.I32)
    assert k.body == (
        ir.Decl("t", ir.F64, ir.Cast(n, ir.F64)),
        ir.assign(a0, s, "+"),
        ir.assign(n, ir.Const(2, ir.I32), "<<"),
    )
    assert k.body[1] == ir.Assign(a0, ir.Cast(ir.Binary("+", ir.Cast(a0, ir.F32), s, ir.F32), ir.I32))


def test_for_loops() -> None:
    k = kernel_of("kernel k(i32 n, out f64 A[n]) {\n  for i: i64 in 0..n step -1 {\n    A[i] = 0.0;\n  }\n}")
    (loop,) = k.body
    assert isinstance(loop, ir.For)
    # Bounds are kept as written; only the variable has the annotated type.
    assert (loop.var, loop.ty, loop.lo, loop.hi, loop.step, loop.par) == (
        "i", ir.I64, ir.Const(0, ir.I32), ir.Var("n", ir.I32), -1, None)
    assert loop.body == (ir.Assign(ir.Index("A", (ir.Var("i", ir.I64),), ir.F64), ir.Const(0.0, ir.F64)),)


def test_else_if_chain() -> None:
    k = kernel_of("kernel k(i32 n) { if (n) { n = 1; } else if (n > 2) { n = 2; } else { n = 3; } }")
    (s,) = k.body
    assert isinstance(s, ir.If) and len(s.orelse) == 1
    inner = s.orelse[0]
    assert isinstance(inner, ir.If) and inner.orelse == (ir.Assign(ir.Var("n", ir.I32), ir.Const(3, ir.I32)),)


def test_helper_call_types_and_order() -> None:
    m = text.parse("kernel k(f32 s, out f32 R[1]) { R[0] = half(s); }\n"
                   "func half(f64 v) -> f32 { return v / 2; }")
    assert [f.name for f in m.funcs] == ["half"]
    ret = m.funcs[0].body[0]
    assert ret == ir.Return(ir.Cast(ir.binary("/", ir.Var("v", ir.F64), ir.Const(2, ir.I32)), ir.F32))
    store = m.kernels[0].body[0]
    assert isinstance(store, ir.Assign)
    assert store.value == ir.Call("half", (ir.Cast(ir.Var("s", ir.F32), ir.F64),), ir.F32)


def test_intents_derived_or_kept() -> None:
    k = kernel_of("kernel k(i32 n, f64 R[n], f64 W[n], f64 RW[n], f64 unused[n], inout f64 K[n]) {\n"
                  "  for i in 0..n { W[i] = R[i] + K[i]; RW[i] *= 2.0; }\n}")
    assert {p.name: p.intent for p in k.params if isinstance(p.ty, ir.ArrayType)} == {
        "R": "in", "W": "out", "RW": "inout", "unused": "in", "K": "inout"}
    assert all(p.intent == "in" for p in k.params if isinstance(p.ty, ir.Scalar))


def test_pointer_param() -> None:
    k = kernel_of("kernel k(i32 n, i32 m, in f64* A[n * m]) {}")
    p = k.params[2]
    assert p.pointer and isinstance(p.ty, ir.ArrayType)
    assert p.ty.dims == (ir.binary("*", ir.Var("n", ir.I32), ir.Var("m", ir.I32)),)


def test_pointer_param_viewed_as_a_matrix_round_trips() -> None:
    src = "kernel k(i32 n, i32 m, inout f64* A[n][m]) {\n  A[n - 1][0] = 1.0;\n}\n"
    k = kernel_of(src)
    p = k.params[2]
    assert p.pointer and p.ty.dims == (ir.Var("n", ir.I32), ir.Var("m", ir.I32))
    assert text.show(k) == src.rstrip("\n") or text.parse(text.show(k), "r.ir").kernels[0] == k


def test_locations() -> None:
    src = "kernel k(i32 n, inout f64 A[n]) {\n  for i in 0..n {\n    A[i] = A[i] + 1.0;\n  }\n}\n"
    m = text.parse(src, "loc.ir")
    k = m.kernels[0]
    loop = k.body[0]
    assert isinstance(loop, ir.For)
    s = loop.body[0]
    assert isinstance(s, ir.Assign) and isinstance(s.value, ir.Binary)
    assert k.loc == Loc("loc.ir", 1, 1)
    assert k.params[1].loc == Loc("loc.ir", 1, 17)
    assert loop.loc == Loc("loc.ir", 2, 3)
    assert loop.hi.loc == Loc("loc.ir", 2, 15)
    assert s.loc == Loc("loc.ir", 3, 5)
    assert s.value.loc == Loc("loc.ir", 3, 17)  # a binary operation is located at its operator
    assert s.value.rhs.loc == Loc("loc.ir", 3, 19)
    assert all(n.loc is not None for n in ir.walk(m))


def test_comments_and_whitespace_are_ignored() -> None:
    a = text.parse("/* block\n comment */ kernel k(i32 n) { // line\n n = n + 1; /* x */ }")
    b = text.parse("kernel k(i32 n) {\n  n += 1;\n}\n")
    assert a == b


# ---------------------------------------------------------------------------
# Printer details


def show_of(e: str) -> str:
    return text.show_expr(expr_of(e))


@pytest.mark.parametrize(("src", "shown"), [
    ("(a - b) - c", "a - b - c"),
    ("a - (b - c)", "a - (b - c)"),
    ("a + (b + c)", "a + (b + c)"),
    ("(a * b) + (c * a)", "a * b + c * a"),
    ("(a + b) * c", "(a + b) * c"),
    ("a << (b + c)", "a << b + c"),
    ("(a << b) + c", "(a << b) + c"),
    ("(a & b) == c", "(a & b) == c"),
    ("a & (b == c)", "a & b == c"),
    ("(a || b) && c", "(a || b) && c"),
    ("a || (b && c)", "a || b && c"),
    ("-(a + b)", "-(a + b)"),
    ("-(-a)", "-(-a)"),
    ("~-a", "~-a"),
    ("a - -3", "a - -3"),
    ("(a ? b : c) ? a : b", "(a ? b : c) ? a : b"),
    ("a ? (b ? c : a) : (c ? a : b)", "a ? b ? c : a : c ? a : b"),
    ("(a ? b : c) + 1", "(a ? b : c) + 1"),
    ("A[a - 1][(b)]", "A[a - 1][b]"),
    ("fmax(y, z + 1.0)", "fmax(y, z + 1.0)"),
    ("x + 1", "x + f32(1)"),
    ("-2147483648", "-2147483648"),
    ("-2147483648L", "-2147483648L"),
    ("2147483648", "2147483648L"),
    ("a / b % c", "a / b % c"),
    ("a / (b % c)", "a / (b % c)"),
])
def test_minimal_parentheses(src: str, shown: str) -> None:
    assert show_of(src) == shown
    assert expr_of(shown) == expr_of(src)


@pytest.mark.parametrize(("const", "shown"), [
    (ir.Const(-3, ir.I32), "-3"),
    (ir.Const(-2**31, ir.I32), "-2147483648"),
    (ir.Const(-2**63, ir.I64), "-9223372036854775808L"),
    (ir.Const(7, ir.U32), "7u"),
    (ir.Const(2**64 - 1, ir.U64), "18446744073709551615uL"),
    (ir.Const(1.0, ir.F64), "1.0"),
    (ir.Const(1e16, ir.F64), "1e+16"),
    (ir.Const(-math.inf, ir.F64), "-1e999"),
    (ir.const(0.1, ir.F32), "0.1f"),
    (ir.const(16777216.0, ir.F32), "16777216.0f"),
    (ir.const(1e-45, ir.F32), "1e-45f"),
    (ir.const(math.inf, ir.F32), "1e999f"),
])
def test_constants(const: ir.Const, shown: str) -> None:
    assert text.show_expr(const) == shown
    assert expr_of(shown) == const


def test_nan_prints_as_an_expression() -> None:
    assert text.show_expr(ir.Const(math.nan, ir.F64)) == "(0.0 / 0.0)"
    e = expr_of("(0.0 / 0.0)")
    assert isinstance(e, ir.Binary)


def test_compound_assignment_printing() -> None:
    x, y = ir.Var("x", ir.I32), ir.Var("y", ir.F64)
    b = ir.Var("b", ir.U8)
    assert text.show_stmt(ir.assign(x, y, "+")) == "x += y;"
    assert text.show_stmt(ir.assign(x, ir.cast(y, ir.I32), "-")) == "x -= i32(y);"
    assert text.show_stmt(ir.assign(b, ir.Const(1, ir.I32), "<<")) == "b <<= 1;"
    # Not the compound form: the operand order differs, or the operation is not on the target.
    assert text.show_stmt(ir.Assign(x, ir.binary("-", ir.Const(1, ir.I32), x))) == "x = 1 - x;"
    assert text.show_stmt(ir.Assign(x, ir.binary("-", x, x)), 2) == "    x -= x;"
    assert text.show_stmt(ir.Assign(x, ir.Cast(ir.binary("*", x, y), ir.I32))) == "x *= y;"


def test_step_and_type_printed_only_when_needed() -> None:
    body = (ir.Assign(ir.Var("t", ir.I32), ir.Const(0, ir.I32)),)
    loop = ir.For("i", ir.I32, ir.Const(0, ir.I32), ir.Var("n", ir.I32), 1, ())
    assert text.show_stmt(loop) == "for i in 0..n {}"
    loop2 = ir.For("i", ir.U64, ir.Const(1, ir.U64), ir.Var("n", ir.U64), 4, body, "x")
    assert text.show_stmt(loop2) == "for i: u64 in 1uL..n step 4 par(x) {\n  t = 0;\n}"


# ---------------------------------------------------------------------------
# Diagnostics: every error names file:line:col


SYNTAX_ERRORS = [
    ("kernel k(i32 n) {\n  for i 0..n {}\n}", "e.ir:2:9: error: missing 'in' in for loop"),
    ("kernel k(i32 n) {\n  for (i = 0; i < n; i++) {}\n}", "e.ir:2:7: error: C-style for loops are not supported"),
    ("kernel k(i32 n) {\n  n = 1\n  n = 2;\n}", "e.ir:2:8: error: missing ';'"),
    ("kernel k(i32 n) {\n  n = 1\n}", "e.ir:2:8: error: missing ';'"),
    ("kernel k(i32 n) {\n  if (n = 2) {}\n}", "e.ir:2:9: error: '=' is not an operator here: use '=='"),
    ("kernel k(i32 n) {\n  double x = 1.0;\n}", "e.ir:2:3: error: unknown type name 'double' (C's 'double' is 'f64')"),
    ("kernel k(int n) {}", "e.ir:1:10: error: unknown type name 'int'"),
    ("func f(f64 x) -> real { return x; }", "e.ir:1:18: error: unknown type name 'real' (types are i8,"),
    ("kernel k(i32 n) {\n  if n > 1 {}\n}", "e.ir:2:6: error: missing '(' after 'if'"),
    ("kernel k(i32 n) {\n  for i in 0 to n {}\n}", "e.ir:2:14: error: missing '..' in loop range"),
    ("kernel k(i32 n) {\n  n++;\n}", "e.ir:2:4: error: '++' is not supported"),
    ("kernel k(i32 n) {\n  n = 1 +;\n}", "e.ir:2:10: error: unexpected ';', expected an expression"),
    ("kernel k(i32 n) {\n  n = 1;\n", "e.ir:2:9: error: unexpected end of input, expected one of: 'for', 'if',"),
    ("kernel k(i32 n) {\n  n = 1 @ 2;\n}", "e.ir:2:9: error: unexpected character '@'"),
    ("kernel k(i32 n) {\n  n = (1 + 2;\n}", "e.ir:2:13: error: unexpected ';', expected ')'"),
    ("kernel k(i32 n) n = 1;", "e.ir:1:17: error: unexpected 'n', expected one of: '->', '{'"),
    ("kernal k() {}", "e.ir:1:1: error: unexpected 'kernal', expected one of: 'func', 'kernel', end of input"),
    ("kernel k(i32 n) {\n  n = 1.0L;\n}", "e.ir:2:10: error: unexpected 'L', expected one of: ';', an operator"),
    ("kernel k(i32 n) { launch = 1; }", "e.ir:1:26: error: unexpected '=', expected one of: '[', '{'"),
]


SEMANTIC_ERRORS = [
    ("kernel k(i32 n) {\n  x = 1;\n}", "e.ir:2:3: error: undeclared name 'x'"),
    ("kernel k(i32 n) {\n  n = n + y;\n}", "e.ir:2:11: error: undeclared name 'y'"),
    ("kernel k(i32 n, f64 A[n][n]) {\n  A[1] = 1.0;\n}", "e.ir:2:3: error: array 'A' has 2 dimension(s) but 1 index"),
    ("kernel k(i32 n, f64 A[n]) {\n  n = A;\n}", "e.ir:2:7: error: array 'A' used without indices"),
    ("kernel k(i32 n) {\n  n = n[0];\n}", "e.ir:2:7: error: 'n' is not an array"),
    ("kernel k(i32 n) {\n  for i in 0..n {\n    i = 1;\n  }\n}", "e.ir:3:5: error: cannot assign to loop variable 'i'"),
    ("kernel k(i32 n, in f64 A[n]) {\n  A[0] = 1.0;\n}", "e.ir:2:3: error: cannot assign to 'A': it is declared 'in'"),
    ("kernel k(i32 n, out f64 A[n]) {\n  A[0] = A[1];\n}", "e.ir:2:10: error: array 'A' is declared 'out' but read"),
    ("kernel k(i32 n, out f64 A[n]) {\n  A[0] -= 1.0;\n}", "e.ir:2:8: error: '-=' reads 'A', which is declared 'out'"),
    ("kernel k(f64 x) {\n  x = pow(x);\n}", "e.ir:2:7: error: 'pow' takes 2 argument(s), got 1"),
    ("func f(f64 v) -> f64 { return v; }\nkernel k(f64 x) {\n  x = f(x, x);\n}",
     "e.ir:3:7: error: 'f' takes 1 argument(s), got 2"),
    ("kernel k(f64 x) {\n  x = frob(x);\n}", "e.ir:2:7: error: unknown function 'frob'"),
    ("kernel k(f64 x) {\n  x = x % 2;\n}", "e.ir:2:9: error: operator '%' needs integer operands, got f64"),
    ("kernel k(f64 x, i32 n) {\n  n = n & x;\n}", "e.ir:2:9: error: operator '&' needs integer operands"),
    ("kernel k(f64 x) {\n  x = ~x;\n}", "e.ir:2:7: error: operator '~' needs an integer operand"),
    ("kernel k(f64 x) {\n  f64 t;\n  f64 t;\n}", "e.ir:3:7: error: declaration 't' shadows 't' declared at e.ir:2:3"),
    ("kernel k(f64 x) {\n  f64 x = 1.0;\n}", "e.ir:2:7: error: declaration 'x' shadows 'x' declared at e.ir:1:10"),
    ("kernel k(f64 x) {\n  if (x) { f64 t; } else { f64 t; }\n}", "e.ir:2:32: error: 't' is declared twice in 'k'"),
    ("kernel k(i32 n) {\n  for i in 0..n { for i in 0..n {} }\n}", "e.ir:2:23: error: loop variable 'i' shadows"),
    ("kernel k(i32 n, i32 n) {}", "e.ir:1:21: error: declaration 'n' shadows"),
    ("kernel k(f64 x) {\n  return;\n}", "e.ir:2:3: error: 'return' outside a func"),
    ("func f(f64 x) {\n  return x;\n}", "e.ir:2:3: error: void func 'f' cannot return a value"),
    ("func f(f64 x) -> f64 {\n  return;\n}", "e.ir:2:3: error: func 'f' must return a value of type f64"),
    ("func f() {}\nkernel k(f64 x) {\n  x = f();\n}", "e.ir:3:7: error: void func 'f' cannot be used in an expression"),
    ("kernel k(f64 x) {\n  x = sqrt;\n}", "e.ir:2:7: error: function 'sqrt' used as a value"),
    ("kernel k(f64 x) {\n  x = x(1);\n}", "e.ir:2:7: error: 'x' is not a function"),
    ("kernel k(f64 x) {}\nkernel k(f64 y) {}", "e.ir:2:8: error: 'k' is already defined at e.ir:1:8"),
    ("func sqrt(f64 x) -> f64 { return x; }", "e.ir:1:6: error: 'sqrt' is a math library function"),
    ("func f(in f64 A[4]) {}", "e.ir:1:8: error: helper func 'f' may only take scalar parameters"),
    ("kernel k(out i32 n) {}", "e.ir:1:10: error: scalar parameter 'n' cannot be 'out'"),
    ("kernel k(i32 n, in f64* A) {}", "e.ir:1:17: error: pointer parameter 'A' needs an extent"),
    ("kernel k(f64 x, in f64 A[x]) {}", "e.ir:1:26: error: extent of 'A' must be an integer, got f64"),
    ("kernel k(i32 n, in i32 B[n], in f64 A[B[0]]) {}", "e.ir:1:39: error: extent of 'A' may only use scalar"),
    ("kernel k(i32 n, f64 A[n]) {\n  n = A[1.0];\n}", "e.ir:2:9: error: array index must be an integer, got f64"),
    ("kernel k(f64 x) {\n  for i in 0..x {}\n}", "e.ir:2:15: error: loop bound must be an integer, got f64"),
    ("kernel k(i32 n) {\n  for i: f32 in 0..n {}\n}", "e.ir:2:10: error: loop variable 'i' must have an integer type"),
    ("kernel k(i32 n) {\n  for i in 0..n step n {}\n}", "e.ir:2:22: error: loop step must be an integer constant"),
    ("kernel k(i32 n) {\n  for i in 0..n step 0 {}\n}", "e.ir:2:22: error: loop step must not be 0"),
    ("kernel k(i32 n) {\n  for i in 0..n par(x) {}\n}", "e.ir:2:21: error: 'par' loops are only allowed inside 'launch'"),
    ("kernel k(i32 n) {\n  launch { for i in 0..n par(w) {} }\n}", "e.ir:2:30: error: par dimension must be x, y, z or lane"),
    ("kernel k(i32 n) {\n  if (n > 0) { launch {} }\n}", "e.ir:2:16: error: 'launch' is only allowed at the top level"),
    ("kernel k(i32 n) {\n  n = 99999999999999999999;\n}", "e.ir:2:7: error: integer literal 99999999999999999999 is too large"),
    ("kernel k(i32 n) {\n  n = 09;\n}", "e.ir:2:7: error: invalid octal literal 09"),
    ("kernel k(i32 n) {}\nkernel j(i32 n) {\n  n = k(n);\n}", "e.ir:3:7: error: kernel 'k' cannot be called"),
    ("func f() {\n  f64 z[4];\n}", "e.ir:2:3: error: local array 'z' must be declared at the top level of a kernel"),
    ("kernel k(i32 n) {\n  for i in 0..n { f64 z[n]; }\n}", "e.ir:2:19: error: local array 'z' must be declared"),
    ("kernel k(i32 n) {\n  i32 m = n;\n  f64 z[m];\n}", "e.ir:3:9: error: extent of local array 'z' may only use"),
    ("kernel k(i32 n) {\n  f64 z[n];\n  z = 1.0;\n}", "e.ir:3:3: error: array 'z' used without indices"),
    ("func f() {\n  trap \"stop\";\n}", "e.ir:2:3: error: 'trap' outside a kernel"),
    ("kernel k(i32 n) {\n  trap stop;\n}", "e.ir:2:8: error: unexpected"),
]


@pytest.mark.parametrize(("src", "headline"), SYNTAX_ERRORS + SEMANTIC_ERRORS)
def test_error_messages(src: str, headline: str) -> None:
    with pytest.raises(TranspileError) as info:
        text.parse(src, "e.ir")
    err = info.value
    assert err.headline.startswith(headline), err.headline
    assert err.source == src
    # The rendered error shows the offending line with a caret under the column.
    assert err.loc is not None
    lines = str(err).split("\n")
    if 1 <= err.loc.line <= len(src.splitlines()):
        assert lines[1] == src.splitlines()[err.loc.line - 1].expandtabs(1)
        assert lines[2] == " " * (err.loc.col - 1) + "^"


# ---------------------------------------------------------------------------
# Properties over generated IR

_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(strategies.modules())
def test_parse_show_round_trip(m: ir.Module) -> None:
    ircheck.check(m)  # the strategies generate valid IR
    shown = text.show(m)
    again = text.parse(shown, "gen.ir")
    assert again == m
    assert text.show(again) == shown


def _extent(e: ir.Expr, sizes: dict[str, int]) -> int:
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.Var):
        return sizes[e.name]
    assert isinstance(e, ir.Binary) and e.op in "+*", e
    a, b = _extent(e.lhs, sizes), _extent(e.rhs, sizes)
    return a + b if e.op == "+" else a * b


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.modules(), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_generated_kernels_run_in_interpreter(m: ir.Module, size: int, seed: int) -> None:
    """Generated kernels are in bounds, divide by nonzero and read only assigned locals."""
    rng = np.random.default_rng(seed)
    for k in m.kernels:
        args: dict[str, object] = dict(strategies.size_args(k, size))
        for p in k.params:
            if p.name in args:
                continue
            if isinstance(p.ty, ir.Scalar):
                args[p.name] = int(rng.integers(-5, 5)) if p.ty.is_int else float(rng.normal())
            else:
                shape = tuple(_extent(d, args) for d in p.ty.dims)  # type: ignore[arg-type]
                dtype = interp.DTYPES[p.ty.elem.name]
                vals = rng.normal(size=shape) * 10 if p.ty.elem.is_float else rng.integers(0, 50, size=shape)
                args[p.name] = vals.astype(dtype)
        interp.run(m, k.name, args)


_TOKENS = ["kernel", "func", "k", "f", "(", ")", "{", "}", "[", "]", ";", ",", "i32", "f64", "f32", "u8", "in",
           "out", "inout", "*", "n", "A", "x", "i", "for", "in", "..", "step", "-1", "par", "if", "else",
           "return", "launch", "=", "+=", "<<=", "+", "-", "/", "%", "<<", "&&", "?", ":", "!", "~", "0", "1",
           "2147483648", "1.5", "1e3f", "0x10u", "sqrt", "->", "//c\n", "/*", "*/", "\n", "@", "1L", "-"]


def _only_transpile_errors(src: str) -> None:
    try:
        m = text.parse(src, "fuzz.ir")
    except TranspileError as e:
        assert e.loc is not None and e.loc.file == "fuzz.ir"
        str(e)  # renders
    else:
        assert text.parse(text.show(m)) == m


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_random_text_gives_only_transpile_errors(src: str) -> None:
    _only_transpile_errors(src)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=40))
def test_token_soup_gives_only_transpile_errors(tokens: list[str]) -> None:
    _only_transpile_errors(" ".join(tokens))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.modules(), st.data())
def test_mutated_programs_give_only_transpile_errors(m: ir.Module, data: st.DataObject) -> None:
    src = text.show(m)
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(src)))
        j = data.draw(st.integers(i, min(len(src), i + 12)))
        how = data.draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        if how == "delete":
            src = src[:i] + src[j:]
        elif how == "duplicate":
            src = src[:j] + src[i:j] + src[j:]
        else:
            tok = data.draw(st.sampled_from(_TOKENS))
            src = src[:i] + tok + (src[i:] if how == "insert" else src[j:])
    _only_transpile_errors(src)


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    src = "kernel k(i32 n) { n = " + "-(" * 3000 + "n" + ")" * 3000 + "; }"
    with pytest.raises(TranspileError):
        text.parse(src)

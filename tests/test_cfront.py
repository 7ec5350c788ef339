"""Tests for the C front end (transpile/frontend/c.py and its cfront_* modules).

Valid inputs are compared with hand-built IR (``loc`` is excluded from
equality).  Invalid inputs live in ``tests/bad/*.c``; the first line of each
says what must be reported: ``// ERROR: LINE:COL: message fragment`` (and
optionally ``// ARGS: function=NAME``).
"""

from __future__ import annotations

import re
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from transpile import ir
from transpile.diagnostics import TranspileError, TranspileWarning
from transpile.frontend.c import parse_file, parse_source
from transpile.ir import F32, F64, I32, I64, U32, U64, interp
from transpile.ir import check as ircheck

TESTS = Path(__file__).resolve().parent
BAD = TESTS / "bad"
GOOD = TESTS / "cfront"
KERNELS = TESTS / "kernels"


# ---------------------------------------------------------------------------
# helpers


def parse(src: str, **kw: object) -> ir.Module:
    """Parse a C snippet; the result must satisfy the IR contract (ircheck)."""
    m = parse_source(textwrap.dedent(src), "t.c", **kw)  # type: ignore[arg-type]
    ircheck.check(m)
    return m


def kernel(src: str, **kw: object) -> ir.Kernel:
    m = parse(src, **kw)
    assert len(m.kernels) == 1, m.kernels
    return m.kernels[0]


def V(name: str, ty: ir.Scalar = I32) -> ir.Var:
    return ir.Var(name, ty)


def C(value: int | float, ty: ir.Scalar = I32) -> ir.Const:
    return ir.const(value, ty)


def A(name: str, *idx: ir.Expr, ty: ir.Scalar = F64) -> ir.Index:
    return ir.Index(name, tuple(idx), ty)


def S(name: str, ty: ir.Scalar = I32) -> ir.Param:
    return ir.Param(name, ty)


def Arr(name: str, elem: ir.Scalar, dims: tuple[ir.Expr, ...], intent: ir.Intent = "in",
        pointer: bool = False) -> ir.Param:
    return ir.Param(name, ir.ArrayType(elem, dims), intent, pointer)


def loop(var: str, lo: ir.Expr, hi: ir.Expr, *body: ir.Stmt, step: int = 1, ty: ir.Scalar = I32) -> ir.For:
    return ir.For(var, ty, lo, hi, step, tuple(body))


def b(op: str, lhs: ir.Expr, rhs: ir.Expr) -> ir.Expr:
    return ir.binary(op, lhs, rhs)


def assert_all_located(node: ir.Node) -> None:
    for n in ir.walk(node):
        assert n.loc is not None, f"no loc on {n!r}"
        if isinstance(n, ir.Param) and isinstance(n.ty, ir.ArrayType):
            for d in n.ty.dims:
                assert_all_located(d)


# ---------------------------------------------------------------------------
# whole kernels


GEMM = """
void gemm(int ni, int nj, int nk, double alpha, double beta,
          double C[ni][nj], double A[ni][nk], double B[nk][nj]) {
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++) {
    for (j = 0; j < nj; j++)
      C[i][j] *= beta;
    for (k = 0; k < nk; k++)
      for (j = 0; j < nj; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
  }
#pragma endscop
}
"""


def test_gemm_exact_ir() -> None:
    m = parse(GEMM)
    ni, nj, nk = V("ni"), V("nj"), V("nk")
    cij = A("C", V("i"), V("j"))
    expected = ir.Kernel("gemm", (
        S("ni"), S("nj"), S("nk"), S("alpha", F64), S("beta", F64),
        Arr("C", F64, (ni, nj), "inout"), Arr("A", F64, (ni, nk)), Arr("B", F64, (nk, nj)),
    ), (
        loop("i", C(0), ni,
             loop("j", C(0), nj, ir.assign(cij, V("beta", F64), "*")),
             loop("k", C(0), nk,
                  loop("j", C(0), nj,
                       ir.assign(cij, b("*", b("*", V("alpha", F64), A("A", V("i"), V("k"))),
                                             A("B", V("k"), V("j"))), "+")))),
    ))
    assert m == ir.Module((), (expected,))
    assert_all_located(m)


def test_locations_point_at_original_columns() -> None:
    src = "#define SQ(x) ((x) * (x))\n" \
          "void f(int n, double A[n]) {\n" \
          "  for (int i  =  0;   i < n; i++)      A[i]   =  SQ(A[i])  +  1.0;\n" \
          "}\n"
    k = parse_source(src, "cols.c").kernels[0]
    f = k.body[0]
    assert isinstance(f, ir.For) and f.loc is not None
    assert (f.loc.file, f.loc.line, f.loc.col) == ("cols.c", 3, 3)
    assign = f.body[0]
    assert isinstance(assign, ir.Assign)
    assert assign.loc is not None and assign.loc.col == src.splitlines()[2].index("A[i]   =") + 1
    const = assign.value.rhs  # type: ignore[union-attr]
    assert isinstance(const, ir.Const) and const.loc is not None
    assert const.loc.col == src.splitlines()[2].index("1.0") + 1
    assert k.loc is not None and (k.loc.line, k.loc.col) == (2, 6)


# ---------------------------------------------------------------------------
# loop normalisation


@pytest.mark.parametrize(("header", "lo", "hi", "step"), [
    ("for (i = 0; i < n; i++)", C(0), V("n"), 1),
    ("for (i = 0; i <= n; ++i)", C(0), b("+", V("n"), C(1)), 1),
    ("for (i = 0; n > i; i += 1)", C(0), V("n"), 1),
    ("for (i = 1; n >= i; i = i + 2)", C(1), b("+", V("n"), C(1)), 2),
    ("for (i = 0; i != n; i = 1 + i)", C(0), V("n"), 1),
    ("for (i = 2; i < n - 1; i += 4)", C(2), b("-", V("n"), C(1)), 4),
    ("for (i = n - 1; i >= 0; i--)", C(0), V("n"), -1),
    ("for (i = n; i > 0; i -= 2)", C(1), b("+", V("n"), C(1)), -2),
    ("for (i = n; 0 < i; --i)", C(1), b("+", V("n"), C(1)), -1),
    ("for (i = n; i != 0; i = i - 1)", C(1), b("+", V("n"), C(1)), -1),
    ("for (i = 10; i >= 2; i -= 3)", C(2), C(11), -3),
    ("for (i = n + 1; i > 1; i += -1)", C(2), b("+", V("n"), C(2)), -1),
    ("for (i = 0; i < N; i++)", C(0), C(100), 1),
])
def test_loop_forms(header: str, lo: ir.Expr, hi: ir.Expr, step: int) -> None:
    k = kernel(f"""
        #define N 100
        void f(int n, double A[200]) {{
          int i;
          {header}
            A[i] = 0;
        }}""")
    assert k.body == (loop("i", lo, hi, ir.assign(A("A", V("i")), C(0)), step=step),)


def test_loop_variable_types_and_declared_in_for() -> None:
    k = kernel("""
        #include <stddef.h>
        void f(long n, size_t m, double A[n], double B[m]) {
          for (long i = 0; i < n; i++) A[i] = 1;
          for (size_t j = 0; j < m; j++) B[j] = 2;
          for (int k = 0; k < n; k++) A[k] = 3;
        }""")
    assert k.body == (
        loop("i", C(0, I64), V("n", I64), ir.assign(A("A", V("i", I64)), C(1)), ty=I64),
        loop("j", C(0, U64), V("m", U64), ir.assign(A("B", V("j", U64)), C(2)), ty=U64),
        loop("k", C(0), ir.cast(V("n", I64), I32), ir.assign(A("A", V("k")), C(3))),
    )


def test_csr_bounds_read_arrays() -> None:
    k = kernel("""
        void spmv(int n, int nnz, int rowptr[n + 1], int col[nnz], double val[nnz],
                  double x[n], double y[n]) {
          for (int i = 0; i < n; i++) {
            double s = 0.0;
            for (int k = rowptr[i]; k < rowptr[i + 1]; k++)
              s += val[k] * x[col[k]];
            y[i] = s;
          }
        }""")
    n, i, kk = V("n"), V("i"), V("k")
    s = V("s", F64)
    assert k.params[2] == Arr("rowptr", I32, (b("+", n, C(1)),))
    assert k.params[-1] == Arr("y", F64, (n,), "out")
    assert k.body == (loop("i", C(0), n,
                           ir.Decl("s", F64, C(0.0, F64)),
                           loop("k", A("rowptr", i, ty=I32), A("rowptr", b("+", i, C(1)), ty=I32),
                                ir.assign(s, b("*", A("val", kk), A("x", A("col", kk, ty=I32))), "+")),
                           ir.assign(A("y", i), s)),)


def test_loop_counter_used_as_scalar_keeps_its_decl() -> None:
    k = kernel("""
        void f(int n, double A[n]) {
          int i = 3;
          A[i] = 1;
          for (i = 0; i < n; i++) A[i] = 0;
          i = 5;
          A[i] = 2;
        }""")
    assert k.body == (
        ir.Decl("i", I32, C(3)),
        ir.assign(A("A", V("i")), C(1)),
        loop("i_1", C(0), V("n"), ir.assign(A("A", V("i_1")), C(0))),
        ir.assign(V("i"), C(5)),
        ir.assign(A("A", V("i")), C(2)),
    )


def test_reinitialised_loop_counter_may_be_reused() -> None:
    k = kernel("""
        void f(int n, double A[n]) {
          int i;
          for (i = 0; i < n; i++) A[i] = 0;
          for (i = n - 1; i >= 0; i--) A[i] += i;
        }""")
    assert [s.var for s in k.body] == ["i", "i"]  # type: ignore[union-attr]


# ---------------------------------------------------------------------------
# parameters and extents


def test_vla_extent_expressions_and_constant_extents() -> None:
    k = kernel("""
        #define H 64
        void blur(int h, int w, double in[h][w], double out[h - 4][w - 4], double k[5][H / 8]) {
          for (int i = 0; i < h - 4; i++)
            for (int j = 0; j < w - 4; j++)
              out[i][j] = in[i + 2][j + 2] * k[0][0];
        }""")
    h, w = V("h"), V("w")
    assert [p.ty for p in k.params[2:]] == [
        ir.ArrayType(F64, (h, w)),
        ir.ArrayType(F64, (b("-", h, C(4)), b("-", w, C(4)))),
        ir.ArrayType(F64, (C(5), b("/", C(64), C(8)))),
    ]
    assert [p.intent for p in k.params[2:]] == ["in", "out", "in"]


@pytest.mark.parametrize(("body", "extent"), [
    # rectangular, row-major by hand
    ("for (int i = 0; i < n; i++) for (int j = 0; j < m; j++) A[i*m + j] = 0;",
     b("*", V("n"), V("m"))),
    # column order
    ("for (int i = 0; i < n; i++) for (int j = 0; j < m; j++) A[j*n + i] = 0;",
     b("*", V("n"), V("m"))),
    # lower triangle: inner bound depends on the outer variable
    ("for (int i = 0; i < n; i++) for (int j = 0; j <= i; j++) A[i*n + j] = 0;",
     b("*", V("n"), V("n"))),
    # upper triangle
    ("for (int i = 0; i < n; i++) for (int j = i; j < n; j++) A[i*n + j] = 0;",
     b("*", V("n"), V("n"))),
    # offset access: the larger of A[i] and A[i + 1]
    ("for (int i = 0; i < n; i++) A[i] = A[i + 1];", b("+", V("n"), C(1))),
    # downward loop and a negative coefficient
    ("for (int i = n - 1; i >= 0; i--) A[n - 1 - i] = 0;", V("n")),
    # constant index outside any loop
    ("A[7] = 1;", C(8)),
])
def test_pointer_extent_derivation(body: str, extent: ir.Expr) -> None:
    k = kernel(f"void f(int n, int m, double *A) {{ {body} for (int q = 0; q < 1; q++) ; }}")
    p = k.params[2]
    assert p.pointer and isinstance(p.ty, ir.ArrayType)
    assert p.ty.dims == (extent,)
    assert_all_located(p)


def test_dereferences_of_parameters_are_subscripts() -> None:
    # *p is p[0] and *(p + e) or *(e + p) is p[e] for a parameter pointing at scalars: the same IR
    # (extents and intents included) as the subscripts; a local shadowing the name is left alone.
    from transpile.ir import text

    deref = kernel("""
        void f(int n, const double *x, double y[n], double *out) {
          double s = 0;
          for (int i = 0; i < n; i++) { *(y + i) = 2 * *(x + i); s += *(i + x); }
          *out = s;
          *out += *y;
        }""")
    subs = kernel("""
        void f(int n, const double *x, double y[n], double *out) {
          double s = 0;
          for (int i = 0; i < n; i++) { y[i] = 2 * x[i]; s += x[i]; }
          out[0] = s;
          out[0] += y[0];
        }""")
    assert text.show(deref) == text.show(subs)
    assert [p.ty.dims for p in deref.params[1:]] == [(V("n"),), (V("n"),), (C(1),)]
    assert_all_located(deref)
    with pytest.raises(TranspileError, match=r"dereferencing a pointer"):
        kernel("void f(int n, double *p, double A[n]) { for (int i = 0; i < n; i++) { double p = 1; A[i] = *p; } }")


def test_a_kernel_returning_a_value_gets_a_return_slot() -> None:
    # The value goes to the slot, the last parameter (an out f64[1]), named apart from every C name.
    k = kernel("""
        float dot(int n, const double *x, int result) {
          double s = result;
          for (int i = 0; i < n; i++) s += x[i];
          return s * 2;
        }""")
    assert k.ret == "result_1" and k.ret_param is k.params[-1]
    assert k.ret_param.intent == "out" and k.ret_param.ty == ir.ArrayType(F32, (C(1),))
    last = k.body[-1]
    assert isinstance(last, ir.Assign) and isinstance(last.target, ir.Index) and last.target.array == "result_1"
    assert last.value.ty == F32  # the C conversion to the return type
    ircheck.check(ir.Module((), (k,)))
    # an early return is a jump to the end (transpile/frontend/structure.py): the loop runs only where
    # it does not happen, and the slot gets the value of the return that ran
    early = parse_source("double f(int n, double A[n]) { if (n > 3) return 1.0; for (int i = 0; i < n; i++) "
                         "A[i] = 0; return 2.0; }", "f.c")
    for n, want in ((2, 2.0), (5, 1.0)):
        got = interp.run(early, "f", {"n": n, "A": np.ones(n), "result": np.zeros(1)})
        assert got["result"][0] == want and (got["A"] == (0.0 if n <= 3 else 1.0)).all()


def test_pointer_extent_unknown_sign_coefficient_takes_both() -> None:
    k = kernel("""
        void f(int n, int m, float *A, const float *restrict B) {
          for (int i = 0; i < n; i++) A[(m - 2) * i] = B[i];
        }""")
    a, bb = k.params[2], k.params[3]
    assert a.intent == "out" and bb.intent == "in" and bb.pointer
    assert isinstance(a.ty, ir.ArrayType) and a.ty.elem == F32
    assert isinstance(a.ty.dims[0], ir.Select)
    assert bb.ty == ir.ArrayType(F32, (V("n"),))


def test_open_first_extent_is_derived() -> None:
    k = kernel("""
        #define N 10
        void f(int n, double A[][N], double (*B)[N]) {
          for (int i = 0; i < n; i++)
            for (int j = 0; j < N; j++)
              B[i][j] = A[i + 1][j];
        }""")
    assert k.params[1] == Arr("A", F64, (b("+", V("n"), C(1)), C(10)))
    assert k.params[2] == Arr("B", F64, (V("n"), C(10)), "out")


# ---------------------------------------------------------------------------
# statements and expressions


def test_locals_shadowing_and_multiple_declarators() -> None:
    k = kernel("""
        void f(int n, double A[n]) {
          double x = 1.0, y;
          for (int i = 0; i < n; i++) {
            double x = A[i];
            y = x;
            {
              int x = 2;
              A[i] = x + y;
            }
          }
          A[0] = x;
        }""")
    x, y, x1, x2 = V("x", F64), V("y", F64), V("x_1", F64), V("x_2")
    assert k.body == (
        ir.Decl("x", F64, C(1.0, F64)),
        ir.Decl("y", F64),
        loop("i", C(0), V("n"),
             ir.Decl("x_1", F64, A("A", V("i"))),
             ir.assign(y, x1),
             ir.Decl("x_2", I32, C(2)),
             ir.assign(A("A", V("i")), b("+", x2, y))),
        ir.assign(A("A", C(0)), x),
    )


def test_statements_compound_ops_if_and_increments() -> None:
    k = kernel("""
        void f(int n, int B[n], double A[n]) {
          double t = 0;
          for (int i = 0; i < n; i++) {
            if (A[i] > 0) t++; else --t;
            B[i] %= 3; B[i] <<= 1; B[i] ^= i; B[i]--;
            A[i] = i > 2 ? t : -1;
          }
          return;
        }""")
    i, t, bi = V("i"), V("t", F64), A("B", V("i"), ty=I32)
    assert k.body == (
        ir.Decl("t", F64, ir.cast(C(0), F64)),
        loop("i", C(0), V("n"),
             ir.If(b(">", A("A", i), C(0)), (ir.assign(t, C(1), "+"),), (ir.assign(t, C(1), "-"),)),
             ir.assign(bi, C(3), "%"), ir.assign(bi, C(1), "<<"), ir.assign(bi, i, "^"),
             ir.assign(bi, C(1), "-"),
             ir.assign(A("A", i), ir.select(b(">", i, C(2)), t, C(-1)))),
    )
    assert k.params[1].intent == "inout" and k.params[2].intent == "inout"


def test_chained_assignment_statement() -> None:
    k = kernel("""
        void f(int n, double A[n]) {
          double a, b;
          for (int i = 0; i < n; i++) {
            a = b = A[i];
            A[i] = a + b;
          }
        }""")
    a, bb = V("a", F64), V("b", F64)
    assert k.body[2].body[:2] == (ir.assign(bb, A("A", V("i"))), ir.assign(a, bb))  # type: ignore[union-attr]


def test_local_arrays_become_allocs() -> None:
    k = kernel("""
        #define M 4
        void f(int n, double A[n]) {
          double z[n], w[M][n + 1];
          for (int i = 0; i < n; i++) { z[i] = A[i]; w[0][i] = z[i]; }
          for (int i = 0; i < n; i++) A[i] = w[0][i];
        }""")
    n = V("n")
    assert k.body[:2] == (ir.Alloc("z", ir.ArrayType(F64, (n,))),
                          ir.Alloc("w", ir.ArrayType(F64, (C(4), b("+", n, C(1))))))
    assert k.params[1].intent == "inout"


def test_local_arrays_in_bare_blocks_become_allocs() -> None:
    # Found by tests/fuzz_cuda.py: a scratch array declared in a bare { } at the top level was
    # refused; the block's statements are flattened into the body, so it is a kernel's scratch
    # array like one declared at the top (two blocks' 'tmp' get distinct names).
    k = kernel("""
        void f(int n, double A[n]) {
          { double tmp[n]; for (int i = 0; i < n; i++) tmp[i] = A[i]; A[0] = tmp[n - 1]; }
          { { double tmp[2 * n]; for (int i = 0; i < n; i++) tmp[i] = A[i]; A[1] = tmp[0]; } }
        }""")
    n = V("n")
    allocs = [s for s in k.body if isinstance(s, ir.Alloc)]
    assert [a.ty for a in allocs] == [ir.ArrayType(F64, (n,)), ir.ArrayType(F64, (b("*", C(2), n),))]
    assert allocs[0].name != allocs[1].name


def test_local_arrays_in_loops_and_ifs_move_to_the_top() -> None:
    # Each iteration's array is a new object, indeterminate until written: one array at the top
    # holds the same values wherever a defined program reads them (Lowerer.local_array).
    k = kernel("""
        void f(int n, int m, double A[n][m], double B[n][m]) {
          double tmp[1];
          for (int i = 0; i < n; i++) {
            double tmp[m];
            for (int j = 0; j < m; j++) tmp[j] = A[i][j];
            if (i > 0) { double u[2][m]; u[1][0] = tmp[0]; B[i][0] = u[1][0]; }
            for (int j = 0; j < m; j++) B[i][j] = tmp[m - 1 - j];
          }
          tmp[0] = 1.0;
        }""")
    m = V("m")
    assert k.body[:3] == (ir.Alloc("tmp_1", ir.ArrayType(F64, (m,))), ir.Alloc("u", ir.ArrayType(F64, (C(2), m))),
                          ir.Alloc("tmp", ir.ArrayType(F64, (C(1),))))
    assert not any(isinstance(s, ir.Alloc) for s in ir.walk(ir.Kernel("k", (), k.body[3:])))
    reads = {n.array for n in ir.walk(k.body[3]) if isinstance(n, ir.Index)}
    assert {"tmp_1", "u"} <= reads and "tmp" not in reads


@pytest.mark.parametrize(("text", "expected"), [
    ("-1", C(-1)),
    ("10", C(10)),
    ("3000000000", C(3000000000, I64)),
    ("0xFFFFFFFF", C(0xFFFFFFFF, U32)),
    ("017", C(15)),
    ("10u", C(10, U32)),
    ("10l", C(10, I64)),
    ("10UL", C(10, U64)),
    ("10ll", C(10, I64)),
    ("1.5", C(1.5, F64)),
    ("1.5f", C(1.5, F32)),
    ("0.1f", C(0.1, F32)),
    ("1e3", C(1000.0, F64)),
    ("'a'", C(97)),
    ("'\\n'", C(10)),
    ("sizeof(double)", C(8, U64)),
    ("sizeof(int)", C(4, U64)),
    ("-2.5", C(-2.5, F64)),
    ("(float)2", ir.cast(C(2), F32)),
    ("!3", ir.unary("!", C(3))),
    ("~0u", ir.unary("~", C(0, U32))),
])
def test_literals(text: str, expected: ir.Expr) -> None:
    k = kernel(f"void f(int n, double A[n]) {{ for (int i = 0; i < n; i++) A[i] = {text}; }}")
    stmt = k.body[0].body[0]  # type: ignore[union-attr]
    assert stmt == ir.assign(A("A", V("i")), expected)
    if isinstance(expected, ir.Const):
        got = stmt.value.operand if isinstance(stmt.value, ir.Cast) else stmt.value
        assert isinstance(got, ir.Const) and type(got.value) is type(expected.value)


def test_math_calls_both_forms_and_conversions() -> None:
    k = kernel("""
        #include <math.h>
        #include <stdlib.h>
        void f(int n, float x[n], double y[n], int z[n]) {
          for (int i = 0; i < n; i++) {
            x[i] = sqrtf(x[i]) + fmaxf(x[i], 0.5f);
            y[i] = sqrt(x[i]) + pow(i, 2) + exp(-y[i]) + M_PI;
            z[i] = abs(z[i] - 3);
          }
        }""")
    i, xi, yi, zi = V("i"), A("x", V("i"), ty=F32), A("y", V("i")), A("z", V("i"), ty=I32)
    body = k.body[0].body  # type: ignore[union-attr]
    assert body[0] == ir.assign(xi, b("+", ir.Call("sqrtf", (xi,), F32),
                                      ir.Call("fmaxf", (xi, C(0.5, F32)), F32)))
    assert body[1] == ir.assign(yi, b("+", b("+", b("+", ir.Call("sqrt", (ir.cast(xi, F64),), F64),
                                                   ir.Call("pow", (ir.cast(i, F64), ir.cast(C(2), F64)), F64)),
                                            ir.Call("exp", (ir.unary("-", yi),), F64)),
                                      C(3.14159265358979323846, F64)))
    assert body[2] == ir.assign(zi, ir.Call("abs", (b("-", zi, C(3)),), I32))


def test_global_constants_and_enums_are_folded() -> None:
    k = kernel("""
        static const double ALPHA = 1.5;
        const int SHIFT = 2 + 1;
        enum { RED, GREEN = 5, BLUE };
        void f(int n, double A[n]) {
          for (int i = 0; i < n; i++) A[i] = ALPHA * (SHIFT + BLUE + RED);
        }""")
    stmt = k.body[0].body[0]  # type: ignore[union-attr]
    assert stmt == ir.assign(A("A", V("i")), b("*", C(1.5, F64), b("+", b("+", C(3), C(6)), C(0))))


@pytest.mark.parametrize(("decl", "ty"), [
    ("int", I32), ("long", I64), ("long long", I64), ("unsigned", U32), ("unsigned long", U64),
    ("size_t", U64), ("ssize_t", I64), ("short", ir.I16), ("unsigned short", ir.U16), ("char", ir.I8),
    ("signed char", ir.I8), ("unsigned char", ir.U8), ("int64_t", I64), ("uint32_t", U32),
    ("float", F32), ("double", F64), ("const double", F64), ("real", F32), ("long int", I64),
])
def test_scalar_parameter_types(decl: str, ty: ir.Scalar) -> None:
    k = kernel(f"""
        #include <stdint.h>
        #include <unistd.h>
        typedef float real;
        void f({decl} s, double A[4]) {{ for (int i = 0; i < 4; i++) A[i] = s; }}""")
    assert k.params[0] == S("s", ty)


def test_every_node_has_a_location() -> None:
    m = parse_file(str(GOOD / "polybench_like.c"))
    ircheck.check(m)
    assert_all_located(m)
    for p in m.kernels[0].params:
        assert p.loc is not None and p.loc.file.endswith("polybench_like.c")


# ---------------------------------------------------------------------------
# helper functions


def test_helpers_are_lowered_transitively_in_dependency_order() -> None:
    m = parse("""
        static double sq(double x) { return x * x; }
        static double clamp(double v, double lo, double hi) {
          if (v < lo) return lo;
          return v > hi ? hi : v;
        }
        static double norm2(double a, double b) { return clamp(sq(a) + sq(b), 0, 1e9); }
        static int unused(int x) { return x; }
        void f(int n, double A[n], double B[n]) {
          for (int i = 0; i < n; i++) B[i] = norm2(A[i], 2.0f);
        }""")
    # callees before callers (clamp is resolved before its arguments are lowered)
    assert [f.name for f in m.funcs] == ["clamp", "sq", "norm2"]
    x = V("x", F64)
    assert m.func("sq") == ir.Func("sq", (S("x", F64),), F64, (ir.Return(b("*", x, x)),))
    v, lo, hi = V("v", F64), V("lo", F64), V("hi", F64)
    clamp = m.func("clamp")
    assert clamp is not None and clamp.body == (ir.If(b("<", v, lo), (ir.Return(lo),)),
                                                ir.Return(ir.select(b(">", v, hi), hi, v)))
    call = m.kernels[0].body[0].body[0].value  # type: ignore[union-attr]
    assert call == ir.Call("norm2", (A("A", V("i")), ir.cast(C(2.0, F32), F64)), F64)
    assert_all_located(m)


def test_void_helper_call_statement_is_dropped_with_a_warning() -> None:
    src = """
        static void nothing(int x) { x = x + 1; }
        void f(int n, double A[n]) {
          for (int i = 0; i < n; i++) { nothing(i); A[i] = 0; }
        }"""
    with pytest.warns(TranspileWarning, match="call statement dropped"):
        m = parse(src)
    assert m.kernels[0].body[0].body == (ir.assign(A("A", V("i")), C(0)),)  # type: ignore[union-attr]
    assert m.funcs[0].name == "nothing" and m.funcs[0].ret is None


# ---------------------------------------------------------------------------
# function selection, preprocessing


TWO = """
void init(int n, double A[n]) { for (int i = 0; i < n; i++) A[i] = i; }
void k1(int n, double A[n]) {
#pragma scop
  for (int i = 0; i < n; i++) A[i] *= 2;
#pragma endscop
}
int main(void) { double A[4]; init(4, A); k1(4, A); for (;;) {} return 0; }
"""


def test_selection_prefers_scop_functions() -> None:
    assert [k.name for k in parse(TWO).kernels] == ["k1"]


def test_selection_falls_back_to_functions_with_loops_except_main() -> None:
    m = parse(TWO.replace("#pragma scop", "").replace("#pragma endscop", ""))
    assert [k.name for k in m.kernels] == ["init", "k1"]


def test_selection_by_name() -> None:
    assert [k.name for k in parse(TWO, function="init").kernels] == ["init"]
    with pytest.raises(TranspileError, match=r"function 'k2' not found.*'init', 'k1', 'main'"):
        parse(TWO, function="k2")


def test_defines_and_include_dirs(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "sizes.h").write_text("#ifndef N\n#define N 8\n#endif\n#define SCALE(x) ((x) * FACTOR)\n")
    src = tmp_path / "k.c"
    src.write_text('#include "sizes.h"\nvoid f(double A[N]) {\n'
                   "  for (int i = 0; i < N; i++) A[i] = SCALE(A[i]);\n}\n")
    k = parse_file(str(src), include_dirs=[str(inc)], defines=["N=16", "FACTOR=2.0f", "UNUSED"])
    assert k.kernels[0].params[0].ty == ir.ArrayType(F64, (C(16),))
    assert k.kernels[0].body[0].hi == C(16)  # type: ignore[union-attr]
    with pytest.raises(TranspileError, match="include file 'sizes.h' not found"):
        parse_file(str(src), defines=["FACTOR=2"])
    with pytest.raises(TranspileError, match="invalid define"):
        parse_file(str(src), include_dirs=[str(inc)], defines=["-o /tmp/x"])


def test_polybench_style_program_lowers_only_the_kernel() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = parse_file(str(GOOD / "polybench_like.c"))
    assert m.funcs == () and [k.name for k in m.kernels] == ["kernel_atax"]
    k = m.kernels[0]
    assert [(p.name, p.intent) for p in k.params] == [
        ("m", "in"), ("n", "in"), ("A", "in"), ("x", "in"), ("y", "inout"), ("tmp", "inout")]
    assert [type(s).__name__ for s in k.body] == ["For", "For"]


def test_polybench_header_stand_in_and_quote_includes() -> None:
    m = parse_file(str(GOOD / "gemm_pb.c"), defines=["NI=40"])
    k = m.kernels[0]
    assert k.params[5] == Arr("C", F64, (C(40), C(25)), "inout")
    assert k.body[0].hi == V("ni")  # type: ignore[union-attr]
    assert parse_source((GOOD / "gemm_pb.c").read_text(), str(GOOD / "copy.c")).kernels[0].name == "kernel_gemm"


def test_standard_headers_all_parse() -> None:
    headers = sorted(p.relative_to(p.parents[1] if p.parent.name == "sys" else p.parent).as_posix()
                     for p in (Path(__file__).parents[1] / "transpile" / "frontend" / "include").rglob("*.h")
                     if not p.name.startswith("_"))
    src = "".join(f"#include <{h}>\n" for h in headers)
    k = kernel(src + """
        void f(int n, double A[n]) {
          for (int i = 0; i < n; i++)
            A[i] = fmin(DBL_MAX, INT_MAX) + (A[i] != A[i] ? NAN : INFINITY) + EXIT_SUCCESS + (int32_t)i;
        }""")
    assert len(headers) >= 14 and k.name == "f"


# ---------------------------------------------------------------------------
# invalid inputs


def _bad_cases() -> list[Path]:
    return sorted(BAD.glob("*.c"))


@pytest.mark.parametrize("path", _bad_cases(), ids=lambda p: p.stem)
def test_bad_input(path: Path) -> None:
    text = path.read_text()
    m = re.match(r"// ERROR: (\d+):(\d+): (.*)\n", text)
    assert m, f"{path.name} lacks its '// ERROR: LINE:COL: message' line"
    args = dict(re.findall(r"^// ARGS: (\w+)=(\S+)$", text, re.M))
    with pytest.raises(TranspileError) as info:
        parse_file(str(path), **args)  # type: ignore[arg-type]
    err = info.value
    assert err.headline.startswith(f"{path}:{m.group(1)}:{m.group(2)}: error: "), err.headline
    assert m.group(3) in err.msg
    assert "\n" not in err.headline
    assert err.source is not None  # printed with the offending line and a caret


def test_bad_cases_are_plentiful() -> None:
    assert len(_bad_cases()) >= 12


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "nope.c")
    with pytest.raises(TranspileError) as info:
        parse_file(path)
    assert info.value.headline.startswith(f"{path}:1:1: error: cannot read file")


@pytest.mark.parametrize(("content", "where", "fragment"), [
    (b"", "1:1", "file is empty"),
    (b"  \n\n", "1:1", "file is empty"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00garbage", "1:8", "binary data"),
    (b"int x;\n\xff\xfe\xfa junk", "2:1", "not valid UTF-8"),
    (b"@@@ ###\n", "1:1", "syntax error"),
    (b"/* only a comment */\n", "1:1", "no kernel found"),
    (b"void f(int n, double a[n]) {\n  int i = 0;\n  while (i < n) { a[i] = 0; i++; }\n}\n", "3:3",
     "no kernel found: 'f' has a while loop, which is not supported"),
    (b"void f(int n, double a[n]) {\n  int i = 0;\n  do { a[i] = 0; i++; } while (i < n);\n}\n", "3:3",
     "'f' has a do-while loop"),
    (b"void f(void) { for (;;) ; }\n", "1:16", "without an initialisation"),
    # pycparser says only "Invalid expression" (or nothing) at column 1 here: gcc's message and column
    (b"void f(int n, double A[n]) {\n  int k;\n  for (k = 0; k < n; ++) {\n    A[k] = 0.0;\n  }\n}\n", "3:24",
     "syntax error: expected expression before ')' token"),
    (b"void f(int n, double A[n]) {\n  int k;\n  for (k = 0; k < n; k++)\n    A[k] = 0.0;\n  }\n}\n", "6:1",
     "'}'"),  # pycparser 3.12 names the token itself; 3.0 said nothing, and gcc's message came
    (b"void f(int n, double A[n]) {\n  int j;\n  for (j = ; j < n; j++)\n    A[j] = 0.0;\n}\n", "3:12",
     "syntax error: expected expression before ';' token"),
])
def test_garbage_inputs(tmp_path: Path, content: bytes, where: str, fragment: str) -> None:
    path = tmp_path / "g.c"
    path.write_bytes(content)
    with pytest.raises(TranspileError) as info:
        parse_file(str(path))
    assert info.value.headline.startswith(f"{path}:{where}: error: "), info.value.headline
    assert fragment in info.value.msg


def test_random_inputs_raise_only_transpile_errors() -> None:
    import random

    rng = random.Random(1234)
    pieces = ["for", "(", ")", "{", "}", ";", "int", "double", "i", "n", "A", "[", "]", "=", "+", "*",
              "<", "++", "0", "1.5", "void", "f", ",", "#pragma scop\n", "if", "else", "return", "&", "?", ":"]
    for _ in range(60):
        src = "void f(int n, double A[n]) { " + " ".join(rng.choice(pieces) for _ in range(30)) + " }"
        try:
            parse_source(src, "r.c")
        except TranspileError:
            pass


# ---------------------------------------------------------------------------
# the PolyBench kernel suite (written concurrently by another engineer)


def _kernel_files() -> list[Path]:
    return sorted(KERNELS.glob("*.c")) if KERNELS.is_dir() else []


@pytest.mark.parametrize("path", _kernel_files() or [None], ids=lambda p: p.stem if p else "none")
def test_polybench_kernels_parse(path: Path | None) -> None:
    if path is None:
        pytest.skip("tests/kernels/ has no .c files yet")
    m = parse_file(str(path))
    assert m.kernels
    ircheck.check(m)
    assert_all_located(m)


@pytest.mark.parametrize(("elem", "extent"), [("unsigned char", 256), ("unsigned short", 65536)])
def test_a_narrow_unsigned_element_read_as_an_index_bounds_the_extent(elem: str, extent: int) -> None:
    """``hist[in[i]]``: the index is data, a value of ``in``'s element type, so ``hist`` reaches at most
    its range (and ``+ 1`` past it); a signed, a wide or a narrowed element is still refused."""
    k = kernel(f"""
        void f(int n, const {elem} *in, unsigned *hist, unsigned *next) {{
          for (int i = 0; i < n; i++) {{
            hist[in[i]] += 1;
            next[in[i] + 1] = 0;
          }}
        }}""")
    dims = {p.name: p.ty.dims for p in k.params if isinstance(p.ty, ir.ArrayType)}
    assert dims["hist"] == (C(extent),) and dims["next"] == (C(extent + 1),)
    for bad in ("signed char", "unsigned", "int"):
        with pytest.raises(TranspileError, match="cannot derive the extent of pointer parameter 'hist'"):
            kernel(f"""
                void f(int n, const {bad} *in, unsigned *hist) {{
                  for (int i = 0; i < n; i++) hist[in[i]] += 1;
                }}""")
    with pytest.raises(TranspileError, match="narrower"):
        kernel("""
            void f(int n, const int *in, unsigned *hist) {
              for (int i = 0; i < n; i++) hist[(unsigned char)in[i]] += 1;
            }""")

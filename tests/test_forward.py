"""Scalar forwarding (passes/forward.py): ludcmp's ``w`` accumulates in its home element, which makes
the factorisation lu's nest (rescheduled right-looking); bit-identical; refused where another access
may touch the element, the scalar lives on, is used otherwise, or the element or types differ."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, forward
from tests import affine_nests, strategies
from tests.interp_check import assert_same_results
from tests.polybench import SPECS, make_args
from tests.test_reschedule import _launch_shapes
from transpile import frontend, ir, pipeline
from transpile.ir import check as ircheck
from transpile.ir import interp, text

HEAD = ("kernel k(i32 n, inout f64 a[n][n], inout f64 v[n], in i32 ix[n], inout f32 c[n][n]) {\n")


def _kernel(body: str) -> ir.Module:
    return text.parse(HEAD + body + "}\n")


def _run(m: ir.Module) -> ir.Module:
    out = ir.Module(m.funcs, tuple(forward.run(k) for k in m.kernels))
    ircheck.check(out)
    return out


def _load(name: str) -> ir.Module:
    return frontend.load(SPECS[name].path)


def _same(m: ir.Module, out: ir.Module, n: int = 6, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    # Diagonally dominant, so that the divisions stay tame.
    a = rng.random((n, n)) + n * np.eye(n)
    args = {"n": n, "a": a, "v": rng.random(n), "ix": rng.integers(0, max(n, 1), n).astype(np.int32),
            "c": rng.random((n, n)).astype(np.float32)}
    assert_same_results(m, out, "k", args, ("a", "v", "c"))


def test_registered() -> None:
    assert REGISTRY["forward"] is forward


def test_ludcmp_factorisation_accumulates_in_place() -> None:
    m = _load("ludcmp")
    out = _run(m)
    lines = text.show(out).splitlines()
    assert lines[1:16] == [
        "  f64 w;",
        "  for i in 0..n {",
        "    for j in 0..i {",
        "      for k in 0..j {",
        "        A[i][j] -= A[i][k] * A[k][j];",
        "      }",
        "      A[i][j] /= A[j][j];",
        "    }",
        "    for j in i..n {",
        "      for k in 0..i {",
        "        A[i][j] -= A[i][k] * A[k][j];",
        "      }",
        "    }",
        "  }",
        "  for i in 0..n {",
    ]
    # The substitutions load w from one array and store it to another: they keep their scalar.
    assert text.show(out).count("w -=") == 2
    # The nest is now lu's, statement for statement.
    lu = _load("lu").kernels[0]
    assert out.kernels[0].body[1] == lu.body[0]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 13])
def test_ludcmp_results_are_bit_identical(n: int) -> None:
    m = _load("ludcmp")
    out = _run(m)
    args = make_args("ludcmp", np.random.default_rng(n), {"n": n})
    outputs = [p.name for p in SPECS["ludcmp"].arrays]
    assert_same_results(m, out, m.kernels[0].name, args, outputs)
    # The whole pipeline (rescheduled, mapped): bit-identical run in order; with its parallel loops
    # shuffled the factorisation A still is, while the substitutions' reductions (reduce-gpu's
    # marks, not this pass) may be reassociated.
    lowered = pipeline.lower(m)
    assert_same_results(m, lowered, m.kernels[0].name, args, outputs)
    assert_same_results(m, lowered, m.kernels[0].name, args, ["A"], (0, 1, 2))
    assert_same_results(m, lowered, m.kernels[0].name, args, ["x", "y"], (0, 1, 2), exact=False)


def test_ludcmp_factorisation_is_rescheduled_like_lu() -> None:
    lowered = pipeline.lower(_load("ludcmp"))
    lu = pipeline.lower(_load("lu"))
    shape = _launch_shapes(lu.kernels[0].body)
    assert shape == [("host", "k", [["x"], ["y", "x"]])]
    assert _launch_shapes(lowered.kernels[0].body)[0] == shape[0]
    # --naive skips the pass with the other restructuring passes.
    naive = pipeline.lower(_load("ludcmp"), naive=True)
    assert any(isinstance(n, ir.Var) and n.name == "w" for n in ir.walk(naive.kernels[0].body[1]))


CHOLESKY_WITH_SCALAR = """kernel chol(i32 n, inout f64 A[n][n]) {
  f64 w;
  for i in 0..n {
    for j in 0..i {
      w = A[i][j];
      for k in 0..j {
        w -= A[i][k] * A[j][k];
      }
      A[i][j] = w / A[j][j];
    }
    w = A[i][i];
    for k in 0..i {
      w -= A[i][k] * A[i][k];
    }
    A[i][i] = sqrt(w);
  }
}
"""


@pytest.mark.parametrize("n", [0, 1, 4, 9])
def test_cholesky_with_a_scalar_is_rescheduled_like_cholesky(n: int) -> None:
    # The store's value is a call of the scalar: A[i][i] = sqrt(A[i][i]) after forwarding.
    m = text.parse(CHOLESKY_WITH_SCALAR)
    out = _run(m)
    assert "A[i][i] = sqrt(A[i][i]);" in text.show(out)
    lowered = pipeline.lower(m)
    assert _launch_shapes(lowered.kernels[0].body) == [("host", "k", [[], ["x"], ["y", "x"]])]
    args = make_args("cholesky", np.random.default_rng(n), {"n": n})
    assert_same_results(m, out, "chol", args, ["A"])
    assert_same_results(m, lowered, "chol", args, ["A"], (None, 0, 1))


def test_polybench_kernels_without_the_pattern_are_the_same_object() -> None:
    for name in ("lu", "cholesky", "trisolv", "durbin", "nussinov", "gramschmidt", "symm", "correlation"):
        k = _load(name).kernels[0]
        assert forward.run(k) is k, name


LUDCMP_ROW = """  f64 w;
  for i in 0..n {
    for j in 0..i {
      w = a[i][j];
      for k in 0..j {
        w -= a[i][k] * a[k][j];
      }
      a[i][j] = w / a[j][j];
    }
  }
"""


@pytest.mark.parametrize(("body", "want"), [
    (LUDCMP_ROW, ["for k in 0..j {", "a[i][j] -= a[i][k] * a[k][j];", "}", "a[i][j] /= a[j][j];"]),
    # A declaration with the load as initialiser, in the loop: no declaration is left.
    ("  for i in 0..n {\n    f64 s = a[i][i];\n    for k in 0..i {\n      s += a[i][k] * v[k];\n    }\n"
     "    a[i][i] = s;\n  }\n",
     ["for k in 0..i {", "a[i][i] += a[i][k] * v[k];", "}"]),
    # Updates under an if; the scalar is overwritten before its next read after the store.
    ("  f64 s;\n  for i in 0..n {\n    s = v[i];\n    if (i > 1) {\n      s *= a[i][0];\n    }\n"
     "    v[i] = s - 1.0;\n    s = a[0][i];\n    a[i][i] = s;\n  }\n",
     ["if (i > 1) {", "v[i] *= a[i][0];", "}", "v[i] -= 1.0;", "s = a[0][i];", "a[i][i] = s;"]),
    # Other elements of the array may be read and written in the region.
    ("  f64 s;\n  for i in 1..n {\n    s = v[i];\n    for k in 0..i {\n      v[k] = v[k] + 1.0;\n"
     "      s += v[k];\n    }\n    v[i] = s;\n  }\n",
     ["for k in 0..i {", "v[k] += 1.0;", "v[i] += v[k];", "}"]),
])
def test_rewrites_keep_the_meaning(body: str, want: list[str]) -> None:
    m = _kernel(body)
    out = _run(m)
    assert out != m
    got = [line.strip() for line in text.show(out).splitlines()]
    start = got.index(want[0])
    assert got[start:start + len(want)] == want
    for n in (0, 1, 2, 5, 8):
        _same(m, out, n, seed=n)


@pytest.mark.parametrize("body", [
    # k == j reads the home element through a[i][k] (and k == i through a[k][j]).
    "  f64 w;\n  for i in 0..n {\n    for j in 0..n {\n      w = a[i][j];\n      for k in 0..n {\n"
    "        w -= a[i][k] * a[k][j];\n      }\n      a[i][j] = w;\n    }\n  }\n",
    # Another statement writes the home element in the region.
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w += a[i][k];\n"
    "      v[i] = 0.0;\n    }\n    v[i] = w;\n  }\n",
    # The store's value reads the home element besides the scalar.
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w += a[i][k];\n    }\n"
    "    v[i] = w + v[i];\n  }\n",
    # ... through a compound store (`v[i] *= w` reads v[i] through the target's own node).
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w += a[i][k];\n    }\n"
    "    v[i] *= w;\n  }\n",
    # A loop bound in the region... and a read of a possibly equal element through an indirection.
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w += v[ix[k]];\n    }\n    v[i] = w;\n  }\n",
    # The scalar is read after the store.
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w += a[i][k];\n    }\n"
    "    v[i] = w;\n    a[i][i] = w;\n  }\n",
    # ... after the loop around the pattern.
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w += a[i][k];\n    }\n"
    "    v[i] = w;\n  }\n  v[0] = w;\n",
    # ... in the next iteration, before the load.
    "  f64 w = 0.0;\n  for i in 0..n {\n    a[i][0] = w;\n    w = v[i];\n    for k in 0..i {\n      w += a[i][k];\n"
    "    }\n    v[i] = w;\n  }\n",
    # ... in the next iteration, on the other branch of an if around the pattern.
    "  f64 w = 0.0;\n  for i in 0..n {\n    if (i % 2 == 0) {\n      w = v[i];\n      for k in 0..i {\n"
    "        w += a[i][k];\n      }\n      v[i] = w;\n    } else {\n      a[i][0] = w;\n    }\n  }\n",
    # ... after a loop that overwrites it but may run no iteration.
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w += a[i][k];\n    }\n"
    "    v[i] = w;\n  }\n  for i in 1..n {\n    w = 1.0;\n  }\n  v[0] = w;\n",
    # The scalar used other than through `w op= e`.
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w = a[i][k] - w;\n    }\n    v[i] = w;\n  }\n",
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w += a[i][k];\n      a[k][i] = w;\n"
    "    }\n    v[i] = w;\n  }\n",
    "  f64 w;\n  for i in 0..n {\n    w = v[i];\n    for k in 0..i {\n      w *= w;\n    }\n    v[i] = w;\n  }\n",
    # A different element at the store.
    "  f64 w;\n  for i in 0..n {\n    for j in 0..i {\n      w = a[i][j];\n      for k in 0..j {\n"
    "        w -= a[i][k] * a[k][j];\n      }\n      a[j][i] = w;\n    }\n  }\n",
    # Type mismatch: an f64 accumulator for an f32 element (the conversions are not the same values).
    "  f64 w;\n  for i in 0..n {\n    for j in 0..n {\n      w = f64(c[i][j]);\n      for k in 0..n {\n"
    "        w += a[i][k];\n      }\n      c[i][j] = f32(w);\n    }\n  }\n",
    # A non-affine home element.
    "  f64 w;\n  for i in 0..n {\n    w = v[ix[i]];\n    for k in 0..i {\n      w += a[i][k];\n    }\n"
    "    v[ix[i]] = w;\n  }\n",
])
def test_refusals_leave_the_kernel_unchanged(body: str) -> None:
    k = _kernel(body).kernels[0]
    assert forward.run(k) is k


def test_a_parameter_is_never_forwarded() -> None:
    src = ("kernel k(i32 n, inout f64 v[n], f64 w) {\n  for i in 0..n {\n    w = v[i];\n    w += 1.0;\n"
           "    v[i] = w;\n  }\n}\n")
    k = text.parse(src).kernels[0]
    assert forward.run(k) is k
    # The same with a local is forwarded, and its declaration goes.
    local = text.parse(src.replace(", f64 w)", ")").replace("  for i", "  f64 w;\n  for i", 1))
    out = _run(local)
    assert [s for s in ir.walk(out) if isinstance(s, ir.Decl)] == []
    assert "v[i] += 1.0;" in text.show(out)


# ---------------------------------------------------------------------------
# Random cases: the pattern around random affine regions (tests/affine_nests.py's pieces)

ARRAYS = {"A": 2, "B": 1}


@st.composite
def _updates(draw: st.DrawFn, loop_vars: list[str], depth: int) -> list[ir.Stmt]:
    """Region statements: ``w op= ref`` and random affine statements, some in loops."""
    w = ir.Var("w", ir.F64)
    out: list[ir.Stmt] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["update", "update", "stmt", "loop"] if depth < 2 else ["update", "stmt"]))
        if kind == "update":
            op = draw(st.sampled_from(["+", "-", "*"]))
            out.append(ir.assign(w, draw(affine_nests.refs(loop_vars, ARRAYS)), op))
        elif kind == "stmt":
            out.append(draw(affine_nests.statements(loop_vars, ARRAYS)))
        else:
            var = affine_nests.LOOP_VARS[len(loop_vars)]
            lo: ir.Expr = ir.Const(draw(st.integers(0, 1)), ir.I32)
            hi: ir.Expr = affine_nests.N
            if draw(st.booleans()):
                hi = ir.Var(draw(st.sampled_from(loop_vars)), ir.I32)
            step = draw(st.sampled_from([1, 1, -1, 2]))
            body = tuple(draw(_updates(loop_vars + [var], depth + 1)))
            out.append(ir.For(var, ir.I32, lo, hi, step, body))
    return out


@st.composite
def _pattern_kernels(draw: st.DrawFn) -> ir.Kernel:
    """``for i (for j) { [w = ...;] w = X[e]; <region>; X[e] = g(w); [after] }`` over f64 arrays."""
    outer = ["i", "j"][: draw(st.integers(1, 2))]
    w = ir.Var("w", ir.F64)
    home = draw(affine_nests.refs(outer, ARRAYS))
    region = draw(_updates(outer, 1))
    g: ir.Expr = w
    if draw(st.booleans()):
        g = ir.binary(draw(st.sampled_from(["+", "/"])), w, draw(affine_nests.refs(outer, ARRAYS)))
    store = ir.Assign(home, g)
    if draw(st.booleans()):  # a compound store, X[e] op= g: reads the element through its own target
        store = ir.assign(home, g, draw(st.sampled_from(["+", "*"])))
    body: list[ir.Stmt] = [ir.Assign(w, home), *region, store]
    after = draw(st.sampled_from(["none", "none", "read", "kill"]))
    if after == "read":
        body.append(ir.Assign(draw(affine_nests.refs(outer, ARRAYS)), w))
    elif after == "kill":
        body += [ir.Assign(w, ir.Const(0.5, ir.F64)), ir.Assign(draw(affine_nests.refs(outer, ARRAYS)), w)]
    stmt: ir.Stmt = ir.For(outer[-1], ir.I32, ir.Const(0, ir.I32), affine_nests.N, 1, tuple(body))
    if len(outer) == 2:
        hi = ir.Var("i", ir.I32) if draw(st.booleans()) else affine_nests.N
        stmt = ir.For("i", ir.I32, ir.Const(0, ir.I32), affine_nests.N, 1,
                      (dataclasses.replace(stmt, hi=hi),))
    top: tuple[ir.Stmt, ...] = (ir.Decl("w", ir.F64, ir.Const(0.25, ir.F64)), stmt)
    if draw(st.booleans()):
        top += (ir.Assign(ir.Index("B", (affine_nests.OFFSET,), ir.F64), w),)  # w read at the end
    uses = ir.array_uses(top)
    params = [ir.Param("n", ir.I32)]
    for name in sorted(uses):
        params.append(ir.Param(name, ir.ArrayType(ir.F64, (affine_nests.EXTENT,) * ARRAYS[name]),
                               ir.intent_of(*uses[name])))
    return ir.Kernel("fwd", tuple(params), top)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_pattern_kernels(), st.integers(1, 4), st.integers(0, 2**16))
def test_random_patterns_keep_their_meaning(k: ir.Kernel, n: int, seed: int) -> None:
    """The pass alone, on random regions between a load and a store: bit-identical when it applies."""
    m = ir.Module((), (k,))
    ircheck.check(m)
    out = forward.run(k)
    event("forwarded" if out is not k else "refused")
    got_m = ir.Module((), (out,))
    ircheck.check(got_m)
    args = affine_nests.affine_args(k, n, seed)
    assert affine_nests.same(interp.run(got_m, k.name, args), interp.run(m, k.name, args))


def test_random_patterns_are_sometimes_forwarded() -> None:
    """The strategy above reaches the rewrite (not only refusals)."""
    from hypothesis import find

    k = find(_pattern_kernels(), lambda k: forward.run(k) is not k, settings=settings(max_examples=500))
    assert forward.run(k) is not k


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.kernels(), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_random_kernels_keep_their_meaning(k: ir.Kernel, size: int, seed: int) -> None:
    """On general random kernels (tests/strategies.py): valid IR and the same results, bit for bit."""
    m = ir.Module((), (k,))
    out = forward.run(k)
    got_m = ir.Module((), (out,))
    ircheck.check(got_m)
    if out is k:
        return
    event("forwarded")
    args = _args(k, size, np.random.default_rng(seed))
    assert affine_nests.same(interp.run(got_m, k.name, args), interp.run(m, k.name, args))


def _args(k: ir.Kernel, size: int, rng: np.random.Generator) -> dict[str, object]:
    """Arguments for a generated kernel (as tests/test_text.py builds them)."""
    args: dict[str, object] = dict(strategies.size_args(k, size))
    for p in k.params:
        if p.name in args:
            continue
        if isinstance(p.ty, ir.Scalar):
            args[p.name] = int(rng.integers(-5, 5)) if p.ty.is_int else float(rng.normal())
        else:
            shape = tuple(_extent(d, args) for d in p.ty.dims)
            dtype = interp.DTYPES[p.ty.elem.name]
            vals = rng.normal(size=shape) * 10 if p.ty.elem.is_float else rng.integers(0, 50, size=shape)
            args[p.name] = vals.astype(dtype)
    return args


def _extent(e: ir.Expr, sizes: dict[str, object]) -> int:
    if isinstance(e, ir.Const):
        return int(e.value)
    if isinstance(e, ir.Var):
        return int(sizes[e.name])  # type: ignore[call-overload]
    assert isinstance(e, ir.Binary) and e.op in "+*", e
    a, b = _extent(e.lhs, sizes), _extent(e.rhs, sizes)
    return a + b if e.op == "+" else a * b


def test_the_pipeline_keeps_forwarding_only_where_reschedule_then_changes_the_kernel() -> None:
    """A forwardable accumulator whose nest reschedule leaves alone stays a scalar (in a register on
    the GPU) through the pipeline; ludcmp's, which frees lu's right-looking schedule, is forwarded."""
    body = ("  f64 s;\n  for i in 0..n {\n    s = v[i];\n    for k in 0..n {\n      s += a[i][k] * a[k][0];\n"
            "    }\n    v[i] = s;\n  }\n")
    m = _kernel(body)
    assert _run(m) != m  # the pass alone forwards it
    lowered = pipeline.lower(m, dump_ir=None)
    assert any(isinstance(x, ir.Var) and x.name == "s" for x in ir.walk(lowered.kernels[0]))
    lu_like = pipeline.lower(_load("ludcmp"))
    first = next(s for s in lu_like.kernels[0].body if isinstance(s, ir.For))
    assert not any(isinstance(x, ir.Var) and x.name == "w" for x in ir.walk(first))

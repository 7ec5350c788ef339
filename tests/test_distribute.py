"""Tests for passes/distribute.py: which loops split, in which order, and semantics preservation."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, distribute, map_gpu
from tests import affine_nests, polybench, strategies
from tests.test_map_gpu import (
    arr,
    assert_preserves_semantics,
    at,
    b,
    c,
    gemm,
    i,
    j,
    jacobi_1d,
    kernel,
    loop,
    n,
    sc,
    v,
)
from transpile import ir
from transpile.ir import F64


def test_registered() -> None:
    assert REGISTRY["distribute"] is distribute


def test_gemm_splits_into_two_nests() -> None:
    k = gemm()
    out = distribute.run(k)
    i_loop = k.body[0]
    assert isinstance(i_loop, ir.For)
    assert out.body == tuple(ir.For("i", i_loop.ty, i_loop.lo, i_loop.hi, 1, (s,)) for s in i_loop.body)


def test_dependence_cycle_stays_fused() -> None:
    # A[i] = B[i - 1]; B[i] = A[i]: flow A (same iteration) and flow B (carried by i): a cycle.
    k = kernel("cycle", [sc("n"), arr("A", "inout", n), arr("B", "inout", n)],
               loop("i", c(1), n,
                    ir.assign(at("A", i), at("B", b("-", i, c(1)))),
                    ir.assign(at("B", i), at("A", i))))
    assert distribute.run(k) is k


def test_backward_dependence_reorders() -> None:
    # S0 reads B[i - 1], which S1 wrote one iteration earlier: S1's loop must run first.
    s0 = ir.assign(at("A", i), at("B", b("-", i, c(1))))
    s1 = ir.assign(at("B", i), at("x", i))
    k = kernel("back", [sc("n"), arr("A", "out", n), arr("B", "inout", n), arr("x", "in", n)],
               loop("i", c(1), n, s0, s1))
    out = distribute.run(k)
    assert [lp.body for lp in out.body] == [(s1,), (s0,)]  # type: ignore[attr-defined]


def test_private_scalar_keeps_statements_together() -> None:
    t = v("t", F64)
    k = kernel("priv", [sc("n"), arr("x", "in", n), arr("y", "out", n), arr("z", "out", n)],
               loop("i", c(0), n,
                    ir.Decl("t", F64, at("x", i)),
                    ir.assign(at("y", i), t),
                    ir.assign(at("z", i), b("*", t, c(2.0)))))
    assert distribute.run(k) is k


def test_time_loop_is_not_split() -> None:
    k = jacobi_1d()
    assert distribute.run(k) is k


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.modules())
def test_preserves_semantics(module: ir.Module) -> None:
    assert_preserves_semantics(module, distribute.run)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(affine_nests.kernels(), st.integers(1, 4), st.integers(0, 2**16))
def test_affine_nests_distributed_and_shuffled_equal_sequential(k: ir.Kernel, n: int, seed: int) -> None:
    # Random affine nests (triangular bounds, negative steps) split by distribute, then
    # map-gpu's par marks on the pieces checked by the shuffled interpreter.
    affine_nests.check_case(k, n, seed, lower=lambda k: ir.Module((), (map_gpu.run(distribute.run(k)),)))


def test_needless_splits_are_fused_back_by_the_pipeline() -> None:
    # adi's column sweep: distribute splits `for i` into one loop per statement group
    # (every piece parallel in i); fuse glues them back: one launch, not six.
    from transpile import pipeline
    from transpile.frontend import c as cfront

    spec = polybench.spec("adi")
    module = cfront.parse_file(str(spec.path), function=spec.function)
    (split,) = (distribute.run(k) for k in module.kernels)
    t_loop = next(s for s in split.body if isinstance(s, ir.For))
    assert sum(isinstance(s, ir.For) for s in t_loop.body) == 12
    # The sequential j loop computing p and q (both recurrences over j) stays whole: split, each
    # piece would still carry a dependence over j, in the same thread.
    two = [s for s in ir.walk(split) if isinstance(s, ir.For) and s.var == "j" and len(s.body) == 2]
    assert len(two) == 2 and all({x.target.array for x in s.body} == {"p", "q"} for s in two)  # type: ignore[union-attr]
    (lowered,) = pipeline.lower(module).kernels
    assert sum(isinstance(x, ir.Launch) for x in ir.walk(lowered)) == 2


def test_inner_loop_splits_only_when_a_piece_gains() -> None:
    # for i { for j { x[i][j] = x[i][j - 1] + 1; y[i][j] = y[i][j - 1] * 2 } }: both pieces carry j
    # (kept whole); with z[i][j] = w[i][j] instead of the second recurrence, that piece is parallel
    # in j (split).
    def nest(second: ir.Stmt) -> ir.Kernel:
        def at2(a: str, j_: ir.Expr) -> ir.Expr:
            return ir.Index(a, (i, j_), F64)
        jm1 = b("-", j, c(1))
        return kernel("inner", [sc("n"), arr("x", "inout", n, n), arr("y", "inout", n, n),
                                arr("z", "out", n, n), arr("w", "in", n, n)],
                      loop("i", c(0), n, loop("j", c(1), n,
                                              ir.assign(at2("x", j), b("+", at2("x", jm1), c(1.0))),
                                              second)))
    jm1 = b("-", j, c(1))
    keep = nest(ir.assign(ir.Index("y", (i, j), F64), b("*", ir.Index("y", (i, jm1), F64), c(2.0))))
    assert distribute.run(keep) is keep
    split = distribute.run(nest(ir.assign(ir.Index("z", (i, j), F64), ir.Index("w", (i, j), F64))))
    assert sum(isinstance(s, ir.For) and s.var == "j" for s in ir.walk(split)) == 2

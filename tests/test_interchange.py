"""Tests for passes/interchange.py: legal, useful swaps only, and semantics preservation."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, distribute, interchange, map_gpu
from tests import affine_nests, strategies
from tests.test_map_gpu import (
    arr,
    assert_preserves_semantics,
    at,
    b,
    c,
    gemm,
    gemm_nest,
    i,
    j,
    kernel,
    loop,
    n,
    sc,
    triangular,
)
from transpile import ir
from transpile.ir import text


def _vars(s: ir.Stmt) -> list[str]:
    out = []
    while isinstance(s, ir.For):
        out.append(s.var)
        s = s.body[0]
    return out


def test_registered() -> None:
    assert REGISTRY["interchange"] is interchange


def test_gemm_reduction_loop_moves_inward() -> None:
    out = interchange.run(distribute.run(gemm()))
    assert [_vars(s) for s in out.body] == [["i", "j"], ["i", "j", "k"]]


def test_illegal_direction_is_not_swapped() -> None:
    # A[i][j] = A[i - 1][j + 1]: direction (<, >); swapping would give (>, <).
    k = kernel("skew", [sc("n"), arr("A", "inout", n, n)],
               loop("i", c(1), n, loop("j", c(0), b("-", n, c(1)),
                                       ir.assign(at("A", i, j), at("A", b("-", i, c(1)), b("+", j, c(1)))))))
    assert interchange.run(k) is k


def test_legal_direction_is_swapped() -> None:
    # A[i][j] = A[i - 1][j]: direction (<, =): j is parallel and moves outward.
    k = kernel("down", [sc("n"), arr("A", "inout", n, n)],
               loop("i", c(1), n, loop("j", c(0), n, ir.assign(at("A", i, j), at("A", b("-", i, c(1)), j)))))
    assert _vars(interchange.run(k).body[0]) == ["j", "i"]


def test_parallel_outer_loop_is_kept() -> None:
    k = gemm_nest()
    assert interchange.run(k) is k


def test_triangular_bounds_are_not_swapped() -> None:
    k = triangular()
    assert interchange.run(k) is k


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.modules())
def test_preserves_semantics(module: ir.Module) -> None:
    assert_preserves_semantics(module, interchange.run)


# --- coalescing permutation ---------------------------------------------------

def _k(body: str, params: str = "i32 n, inout f64 A[n][n], in f64 B[n][n]") -> ir.Kernel:
    return text.parse_kernel(f"kernel k({params}) {{\n{body}\n}}\n")


def test_column_order_nest_is_permuted_for_coalescing() -> None:
    # Both loops parallel; j indexes the contiguous dimension, so j becomes the x loop.
    before = _k("for j in 0..n { for i in 0..n { A[i][j] = B[i][j] * 2.0; } }")
    after = _k("for i in 0..n { for j in 0..n { A[i][j] = B[i][j] * 2.0; } }")
    assert interchange.run(before) == after
    (launch,) = [s for s in map_gpu.run(after).body if isinstance(s, ir.Launch)]
    assert [(lp.var, lp.par) for lp in ir.walk(launch) if isinstance(lp, ir.For)] == [("i", "y"), ("j", "x")]


def test_coalesced_nest_is_kept() -> None:
    k = _k("for i in 0..n { for j in 0..n { A[i][j] = B[j][i]; } }")  # a tie: source order stays
    assert interchange.run(k) is k


def test_inner_sequential_accesses_weigh_more() -> None:
    # Three accesses prefer j, but the two in the k loop run n times per thread (weight 8
    # each), and they prefer i: i becomes the x loop.
    params = "i32 n, out f64 X[n][n], in f64 W[n][n], inout f64 Y[n][n], in f64 Z[n][n]"
    body = "X[i][j] = W[i][j] * 2.0; for k in 0..n { Y[j][i] += Z[k][i]; }"
    before = _k(f"for i in 0..n {{ for j in 0..n {{ {body} }} }}", params)
    after = _k(f"for j in 0..n {{ for i in 0..n {{ {body} }} }}", params)
    assert interchange.run(before) == after


def test_triangular_parallel_nest_is_not_permuted() -> None:
    k = _k("for j in 0..n { for i in j..n { A[i][j] = B[i][j]; } }")
    assert interchange.run(k) is k


def test_sequential_loop_between_blocks_permutation() -> None:
    # k carries a (<, >) dependence, so j cannot move out past it, and i (outer) stays x.
    params = "i32 n, inout f64 A[n][n][n]"
    k = _k("for i in 0..n { for k in 1..n { for j in 0..n - 1 {"
           " A[k][j][i] = A[k - 1][j + 1][i]; } } }", params)
    assert interchange.run(k) is k


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(affine_nests.kernels(), st.integers(1, 4), st.integers(0, 2**16))
def test_affine_nests_interchanged_and_shuffled_equal_sequential(k: ir.Kernel, n: int, seed: int) -> None:
    # interchange (swaps and coalescing permutation) after distribution, then map-gpu's par
    # marks checked by the shuffled interpreter.
    affine_nests.check_case(k, n, seed, lower=lambda k: ir.Module((), (map_gpu.run(interchange.run(distribute.run(k))),)))


@st.composite
def _parallel_nests(draw: st.DrawFn) -> ir.Kernel:
    """Rectangular 2-3 deep nests whose subscripts are permuted loop variables: coalescing candidates."""
    depth = draw(st.integers(2, 3))
    names = list(affine_nests.LOOP_VARS[:depth])
    ranks = {"A": 2, "B": 2, "C": 3}

    def ref(name: str) -> ir.Index:
        subs = []
        for _ in range(ranks[name]):
            e: ir.Expr = affine_nests.OFFSET
            var = draw(st.sampled_from(names + [""]))
            if var:
                e = ir.binary("+", e, ir.binary("*", affine_nests._c(draw(st.sampled_from([1, -1]))),
                                                ir.Var(var, ir.I32)))
            e = ir.binary("+", e, affine_nests._c(draw(st.integers(-1, 1))))
            subs.append(e)
        return ir.Index(name, tuple(subs), ir.F64)

    body: tuple[ir.Stmt, ...] = tuple(
        ir.assign(ref(draw(st.sampled_from(["A", "C"]))), ir.binary("+", ref("B"), ref(draw(st.sampled_from("ABC")))))
        for _ in range(draw(st.integers(1, 2))))
    for var in reversed(names):
        body = (ir.For(var, ir.I32, affine_nests._c(0), affine_nests.N, 1, body),)
    uses = ir.array_uses(body)
    params = [ir.Param("n", ir.I32)] + [
        ir.Param(a, ir.ArrayType(ir.F64, (affine_nests.EXTENT,) * ranks[a]), ir.intent_of(*uses[a]))
        for a in sorted(uses)]
    return ir.Kernel("affine", tuple(params), body)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_parallel_nests(), st.integers(1, 2), st.integers(0, 2**16))
def test_coalescing_permutation_shuffled_equal_sequential(k: ir.Kernel, n: int, seed: int) -> None:
    affine_nests.check_case(k, n, seed, lower=lambda k: ir.Module((), (map_gpu.run(interchange.run(k)),)))


# --- triangular swaps -----------------------------------------------------------

TRI_PARAMS = "i32 n, inout f64 x[n + 8], in f64 B[n + 8][n + 8]"


def _tri(la: int, lb: str, hb: str) -> ir.Kernel:
    """``a`` carries (x[b] is reused across a), ``b`` is parallel; one of b's bounds reads a."""
    return _k(f"for a in {la}..n {{\n for b in {lb}..{hb} {{\n x[b] = x[b] * 0.5 + B[a][b];\n }}\n}}",
              TRI_PARAMS)


def _run_tri(k: ir.Kernel, n: int) -> dict:
    import numpy as np

    from transpile.ir import interp
    rng = np.random.default_rng(n)
    args = {"n": n, "x": rng.random(n + 8), "B": rng.random((n + 8, n + 8))}
    return interp.run(ir.Module((), (k,)), "k", args)


@pytest.mark.parametrize(("la", "lb", "hb", "swaps"), [
    (0, "0", "a", True),          # symm: b < a, and LA <= LB - c + 1
    (0, "0", "a + 1", True),
    (1, "0", "a + 1", False),     # at b = 0, a >= b would not imply a >= 1
    (2, "0", "a - 1", True),
    (0, "2", "a", True),
    (0, "a", "n", True),          # b >= a, and HB - c <= HA
    (0, "a + 1", "n", True),
    (1, "a - 1", "n", False),     # at b = n - 1, a <= b + 1 would not imply a < n
    (0, "a", "n + 2", False),     # HB is not HA: unprovable here
])
def test_triangular_pairs_swap_over_the_same_set(la: int, lb: str, hb: str, swaps: bool) -> None:
    k = _tri(la, lb, hb)
    got = interchange.run(k)
    assert (got is not k) == swaps
    for size in (0, 1, 2, 3, 7):
        want, have = _run_tri(k, size), _run_tri(got, size)
        assert (want["x"] == have["x"]).all(), (size, text.show(ir.Module((), (got,))))


def test_triangular_side_conditions() -> None:
    swap = interchange._swap
    assert swap(_tri(0, "0", "a").body[0]) is not None  # type: ignore[arg-type]
    assert swap(_tri(1, "0", "a + 1").body[0]) is None  # a >= b would not imply a >= 1 at b = 0
    assert swap(_tri(0, "a - 1", "n").body[0]) is None  # a <= b + 1 would not imply a < n at b = n - 1
    assert swap(_tri(0, "a", "n + 2").body[0]) is None


def test_symm_update_becomes_a_parallel_nest() -> None:
    from tests import polybench
    from transpile import pipeline
    from transpile.frontend import c as cfront
    spec = polybench.spec("symm")
    lowered = pipeline.lower(cfront.parse_file(str(spec.path), function=spec.function))
    launches = [s for s in ir.walk(lowered) if isinstance(s, ir.Launch)]
    assert len(launches) == 2
    assert all(s.body[0].par == "y" for s in launches)  # type: ignore[union-attr]

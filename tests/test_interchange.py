"""Tests for passes/interchange.py: legal, useful swaps only, and semantics preservation."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from passes import REGISTRY, distribute, interchange
from tests import strategies
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

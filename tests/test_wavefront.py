"""Tests for passes/wavefront.py: skew only provably legal, fully sequential nests; keep semantics.

The differential checks run the mapped result in the interpreter's shuffled
mode (every ``par`` loop in a random order), so a wavefront whose inner loop
is wrongly parallel changes the result.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, event, find, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, distribute, interchange, map_gpu, wavefront
from tests import affine_nests, polybench
from tests.test_map_gpu import (
    arr,
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
    random_args,
    sc,
    seidel,
    v,
)
from tests.test_parallel_semantics import check_case, same
from transpile import ir, pipeline
from transpile.frontend import c as cfront
from transpile.ir import check as ircheck
from transpile.ir import interp, text


def _front(name: str) -> ir.Module:
    spec = polybench.spec(name)
    return cfront.parse_file(str(spec.path), function=spec.function)


def _before_wavefront(k: ir.Kernel) -> ir.Kernel:
    return interchange.run(distribute.run(k))


def _host_and_par(k: ir.Kernel) -> tuple[list[str], list[str]]:
    """(host loop variables, par loop variables) of a mapped kernel."""
    host, par = [], []

    def visit(stmts: tuple[ir.Stmt, ...], in_launch: bool) -> None:
        for s in stmts:
            if isinstance(s, ir.Launch):
                visit(s.body, True)
            elif isinstance(s, ir.For):
                if s.par:
                    par.append(s.var)
                elif not in_launch:
                    host.append(s.var)
                visit(s.body, in_launch)
            elif isinstance(s, ir.If):
                visit(s.then, in_launch)
                visit(s.orelse, in_launch)

    visit(k.body, False)
    return host, par


def test_registered() -> None:
    assert REGISTRY["wavefront"] is wavefront


# ---------------------------------------------------------------------------
# PolyBench: seidel-2d, nussinov, floyd-warshall


def test_seidel_2d_becomes_host_wavefronts_of_parallel_time_steps_and_rows() -> None:
    (k,) = pipeline.lower(_front("seidel-2d")).kernels
    assert _host_and_par(k) == (["w"], ["i", "t"])  # t inside: 4 elements apart, i a row apart
    shown = text.show(k)
    # All three loops carry dependences.  Execution-order distances (t, i, j): (0, 0, 1), (0, 1, -1),
    # (0, 1, 0), (0, 1, 1) within a time step, (1, 0, 0), (1, 0, -1), (1, -1, -1), (1, -1, 0), (1, -1, 1)
    # from the step before: h = (ht, hi, 1) needs hi >= 2 and ht >= hi + 2, so h = (4, 2, 1) and
    # j = w - 4 * t - 2 * i: 4 * tsteps + 3 * n - 12 launches instead of tsteps * (3 * n - 8).
    assert "for w in 3..3 * n + 4 * tsteps - 9 host(oneblock) {" in shown
    assert "if (1 <= w - 4 * t - 2 * i && w - 4 * t - 2 * i < n - 1) {" in shown
    assert "A[i][w - 4 * t - 2 * i] = " in shown


@pytest.mark.parametrize(("name", "host", "inner"), [
    # floyd-warshall: passes/closure.py takes its k step first (tests/test_closure.py)
    ("nussinov", ["w"], "table[i][w + i] = "),  # downward i: w = j - i, the anti-diagonals
])
def test_polybench_nests_become_wavefronts(name: str, host: list[str], inner: str) -> None:
    (k,) = pipeline.lower(_front(name)).kernels
    assert _host_and_par(k) == (host, ["i"])
    assert inner in text.show(k)


@pytest.mark.parametrize("name", ["seidel-2d", "floyd-warshall", "nussinov"])
@pytest.mark.parametrize("sizes", [None, {"n": 1}, {"n": 2}, {"n": 3}, {"n": 6}])
def test_polybench_wavefront_shuffled_equals_original(name: str, sizes: dict[str, int] | None) -> None:
    module = _front(name)
    lowered = pipeline.lower(module)
    ircheck.check(lowered)
    fn = polybench.spec(name).function
    for seed in range(3):
        args = polybench.make_args(name, np.random.default_rng(seed), sizes)
        want = interp.run(module, fn, args)
        for shuffle in range(3):
            got = interp.run(lowered, fn, args, shuffle=seed * 11 + shuffle)
            assert same(got, want), f"{name} sizes={sizes} seed={seed} shuffle={shuffle}"


@pytest.mark.parametrize("name", ["gemm", "jacobi-2d", "jacobi-1d", "heat-3d", "2mm", "lu", "cholesky",
                                  "ludcmp", "trisolv", "adi", "deriche", "durbin"])
def test_polybench_kernels_without_a_legal_profitable_wavefront_are_unchanged(name: str) -> None:
    (k,) = _front(name).kernels
    k = _before_wavefront(k)
    assert wavefront.run(k) is k


# ---------------------------------------------------------------------------
# Hand-written nests


def _a2(e1: ir.Expr, e2: ir.Expr) -> ir.Index:
    return at("A", e1, e2)


def _minus(e: ir.Expr, k: int) -> ir.Expr:
    return b("-", e, c(k))


def _plus(e: ir.Expr, k: int) -> ir.Expr:
    return b("+", e, c(k))


def _nest(value: ir.Expr, name: str = "skewed") -> ir.Kernel:
    """``for i in 1..n-1 { for j in 1..n-1 { A[i][j] = value } }`` over ``A[n+4][n+4]``."""
    ext = _plus(n, 4)
    return kernel(name, [sc("n"), arr("A", "inout", ext, ext)],
                  loop("i", c(1), _minus(n, 1), loop("j", c(1), _minus(n, 1), ir.assign(_a2(i, j), value))))


def test_unbounded_negative_distance_forbids_every_hyperplane() -> None:
    # A[i][j] = A[i-1][n-1-j] + A[i][j-1]: distances (0, 1) and (1, n-1-2j): no h works.
    k = _nest(b("+", _a2(_minus(i, 1), b("-", _minus(n, 1), j)), _a2(i, _minus(j, 1))))
    assert wavefront.run(k) is k


def test_scalar_accumulator_forbids_every_hyperplane() -> None:
    s = v("s", ir.F64)
    ext = _plus(n, 4)
    k = kernel("acc", [sc("n"), arr("A", "inout", ext, ext)],
               ir.Decl("s", ir.F64, c(0.0)),
               loop("i", c(1), _minus(n, 1), loop("j", c(1), _minus(n, 1),
                                                  ir.assign(s, b("+", s, _a2(i, j))),
                                                  ir.assign(_a2(i, j), s))))
    assert wavefront.run(k) is k


def test_steep_distance_needs_a_steep_hyperplane() -> None:
    # Distances (0, 1) and (1, -5): h = (ha, 1) needs ha >= 6.
    k = _nest(b("+", _a2(_minus(i, 1), _plus(j, 5)), _a2(i, _minus(j, 1))))
    assert wavefront.run(k) is k  # beyond MAX_HA
    out = wavefront.run(k, max_ha=6)
    assert "A[i][w - 6 * i] = " in text.show(out)
    _check_shuffled(k, out)


def test_downward_loops_are_skewed_in_execution_order() -> None:
    # Both loops count down: execution-order distances (1, 0) (0, 1) (1, -1) give h = (2, 1),
    # i.e. w = 2 * (-i) + (-j) and j = -2 * i - w; the guard keeps the triangle j >= i.
    k = text.parse("""
        kernel down(i32 n, inout f64 A[n + 2][n + 2]) {
          for i in 1..n step -1 {
            for j in i..n step -1 {
              A[i][j] = A[i + 1][j] + A[i][j + 1] + A[i + 1][j - 1];
            }
          }
        }""", "down.ir").kernels[0]
    out = wavefront.run(k)
    shown = text.show(ir.Module((), (out,)))
    assert "for w in -(3 * n) + 3..-2 {" in shown
    assert "if (i <= -2 * i - w && -2 * i - w < n) {" in shown
    _check_shuffled(k, out, sizes=(0, 1, 2, 3, 6))


def test_parallel_loops_are_left_to_map_gpu() -> None:
    for k in (gemm(), jacobi_1d()):
        k = _before_wavefront(k)
        assert wavefront.run(k) is k
    # A parallel loop around the pair, or inside it, also keeps the nest as it is.
    ext = _plus(n, 4)
    three = at("B", v("l"), i, j)
    k = kernel("outer_par", [sc("n"), arr("B", "inout", ext, ext, ext)],
               loop("l", c(0), n, loop("i", c(1), n, loop("j", c(1), n, ir.assign(
                   three, b("+", at("B", v("l"), _minus(i, 1), j), at("B", v("l"), i, _minus(j, 1))))))))
    assert wavefront.run(k) is k
    k = kernel("inner_par", [sc("n"), arr("B", "inout", ext, ext, ext)],
               loop("i", c(1), n, loop("j", c(1), n, loop("l", c(0), n, ir.assign(
                   at("B", i, j, v("l")), b("+", at("B", _minus(i, 1), j, v("l")), at("B", i, _minus(j, 1), v("l"))))))))
    assert wavefront.run(k) is k
    # ...while the 2-deep form of the same recurrence is skewed.
    two = _nest(b("+", _a2(_minus(i, 1), j), _a2(i, _minus(j, 1))))
    assert wavefront.run(two) is not two


def test_result_is_a_fixpoint() -> None:
    (k,) = _front("seidel-2d").kernels
    once = wavefront.run(_before_wavefront(k))
    assert once is not k
    assert wavefront.run(once) is once


def test_post_check_rejects_an_illegal_hyperplane(monkeypatch: pytest.MonkeyPatch) -> None:
    # Force h = (0, 0, 1) on seidel's whole nest, then h = (0, 1) on its (i, j) pair: the new t and i
    # loops would carry A[i][j] -> A[i][j] and A[i-1][j] -> A[i][j]; the dependence analysis of the
    # result catches both and the nest stays as it was.
    (k,) = _front("seidel-2d").kernels
    k = _before_wavefront(k)
    monkeypatch.setattr(wavefront._Context, "hyperplane", lambda self, loops, la: (0,) * (len(loops) - 1))
    assert wavefront.run(k) is k


def test_toy_seidel_time_loop_is_skewed() -> None:
    # No enclosing loop: the pair is (t, i) itself; A[i] = A[i-1] + A[i] has (0,1) (1,0) (1,-1).
    out = map_gpu.run(wavefront.run(seidel()))
    assert _host_and_par(out) == (["w"], ["t"])
    _check_shuffled(seidel(), out)


_TIMED = """
    kernel timed(i32 tsteps, i32 n, inout f64 A[n + 6][n + 6]) {
      for t in 0..tsteps {
        for i in 1..n - 1 {
          for j in 1..n - 1 {
            A[i][j] = (A[i - 1][j + 1] + A[i][j - 1] + A[i + 1][j + OFF]) / 3.0;
          }
        }
      }
    }"""


def _timed(off: int) -> ir.Kernel:
    return text.parse(_TIMED.replace("OFF", str(off)), "timed.ir").kernels[0]


def test_time_loop_joins_the_wavefront_of_a_3_deep_nest() -> None:
    # The docstring's example: distances (0, 1, -1) (0, 0, 1) (0, 1, 0) within a step, (1, -1, 0)
    # (1, -1, 1) (1, 0, -1) (1, 0, 0) across steps: h = (3, 2, 1), t and i parallel.
    k = _timed(0)
    out = wavefront.run(k)
    shown = text.show(ir.Module((), (out,)))
    assert "for w in 3..3 * n + 3 * tsteps - 8 {" in shown
    assert "A[i][w - 3 * t - 2 * i] = " in shown
    assert _host_and_par(map_gpu.run(out)) == (["w"], ["i", "t"])
    _check_shuffled(k, out, sizes=(0, 1, 2, 3, 6))


def test_steep_time_distance_keeps_the_time_loop_outside() -> None:
    # A[i + 1][j + 4] from the step before: (1, -1, -4) needs ht >= hi + 5 > MAX_HA for the triple,
    # while the pair (i, j) inside t only sees (0, 1, 0) (0, 0, 1) (0, 1, 4) (0, 1, -1): h = (2, 1).
    k = _timed(4)
    out = wavefront.run(k)
    assert _host_and_par(map_gpu.run(out)) == (["t", "w"], ["i"])
    assert "A[i][w - 2 * i] = " in text.show(ir.Module((), (out,)))
    _check_shuffled(k, out, sizes=(0, 1, 3, 6))
    wide = wavefront.run(k, max_ha=8)  # ht = 7, hi = 2: (1, -1, -4) -> 7 - 2 - 4 = 1
    assert "A[i][w - 7 * t - 2 * i] = " in text.show(ir.Module((), (wide,)))
    _check_shuffled(k, wide, sizes=(0, 1, 3, 6))


def test_hyperplane_search_takes_the_smallest_slopes() -> None:
    # (0, 0) .. (4, 4) by sum, then lexicographically: (3, 2) is the first legal one above, not (4, 2).
    assert wavefront._Context.hyperplane.__doc__ and "smallest sum" in wavefront._Context.hyperplane.__doc__
    out = wavefront.run(_timed(0), max_ha=3)
    assert "w - 3 * t - 2 * i" in text.show(ir.Module((), (out,)))
    out = wavefront.run(_timed(0), max_ha=2)  # ht = 3 is out of reach: the pair inside t
    assert _host_and_par(map_gpu.run(out)) == (["t", "w"], ["i"])


# ---------------------------------------------------------------------------
# Properties


def _check_shuffled(k: ir.Kernel, out: ir.Kernel, sizes: tuple[int, ...] = (0, 1, 2, 3, 5)) -> None:
    """``map_gpu(out)`` in shuffled mode equals ``k`` run sequentially."""
    module = ir.Module((), (k,))
    mapped = ir.Module((), (map_gpu.run(out),))
    ircheck.check(mapped)
    for size in sizes:
        args = random_args(k, seed=size, size=size)
        want = interp.run(module, k.name, args)
        for shuffle in range(3):
            assert same(interp.run(mapped, k.name, args, shuffle=size * 5 + shuffle), want), (size, shuffle)


@st.composite
def _stencil_nests(draw: st.DrawFn) -> ir.Kernel:
    """A 2-deep nest (maybe inside a time loop) of 1-2 stencil statements over ``A``, ``B[n+4][n+4]``.

    Subscripts are ``i + di``, ``j + dj`` (|d| <= 2, offset by 2), bounds in
    ``[0, n)`` (rectangular or triangular), steps +1 or -1: the shapes where
    wavefronts apply, and many where they must not.
    """
    def sub(e: ir.Expr) -> ir.Expr:
        return _plus(e, 2 + draw(st.integers(-2, 2)))

    def ref() -> ir.Index:
        name = draw(st.sampled_from("AB"))
        if draw(st.integers(0, 5)) == 0:  # a reversed subscript: unbounded distances
            return at(name, sub(i), _plus(b("-", _minus(n, 1), j), 2))
        return at(name, sub(i), sub(j))

    stmts = []
    for _ in range(draw(st.integers(1, 2))):
        value: ir.Expr = ref()
        for _ in range(draw(st.integers(0, 3))):
            value = b(draw(st.sampled_from("+-")), value, ref())
        stmts.append(ir.assign(at(draw(st.sampled_from("AB")), _plus(i, 2), _plus(j, 2)),
                               b("*", value, c(0.5))))
    lo_i = c(draw(st.integers(0, 1)))
    lo_j, hi_j = c(draw(st.integers(0, 1))), n
    shape = draw(st.sampled_from(["rect", "upper", "lower"]))
    if shape == "upper":
        lo_j = _plus(i, draw(st.integers(0, 1)))
    elif shape == "lower":
        hi_j = i
    body: ir.For = loop("i", lo_i, n, loop("j", lo_j, hi_j, *stmts, step=draw(st.sampled_from([1, -1]))),
                        step=draw(st.sampled_from([1, -1])))
    if draw(st.booleans()):
        body = loop("t", c(0), v("m"), body)
    ext = _plus(n, 4)
    uses = ir.array_uses((body,))
    params = [sc("n"), sc("m")] + [arr(x, ir.intent_of(*uses[x]), ext, ext) for x in sorted(uses)]
    return kernel("stencil", params, body)


@settings(max_examples=int(os.environ.get("TRANSPILE_FUZZ_EXAMPLES", "120")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_stencil_nests())
def test_random_stencil_nests_wavefront_then_map_gpu_shuffled_equal_sequential(k: ir.Kernel) -> None:
    out = wavefront.run(k)
    event("skewed" if out is not k else "kept")
    _check_shuffled(k, out, sizes=(0, 1, 3, 5))


@pytest.mark.slow
def test_random_stencil_nests_are_often_skewed() -> None:
    # The property above is only meaningful if the strategy reaches skewed nests,
    # with and without a time loop around them, and with the time loop in the wavefront.
    for timed in (False, True):
        k = find(_stencil_nests(), lambda k, timed=timed: wavefront.run(k) is not k and (k.body[0].var == "t") == timed,
                 settings=settings(max_examples=500, database=None, deadline=None))
        assert any(isinstance(s, ir.If) for s in ir.walk(wavefront.run(k)))

    def triple(k: ir.Kernel) -> bool:  # w on the host, t and i launched in parallel
        return _host_and_par(map_gpu.run(wavefront.run(k)))[0] == ["w"] and \
            sorted(_host_and_par(map_gpu.run(wavefront.run(k)))[1]) == ["i", "t"]

    k = find(_stencil_nests(), triple, settings=settings(max_examples=2000, database=None, deadline=None))
    assert any(isinstance(s, ir.If) for s in ir.walk(wavefront.run(k)))


@settings(max_examples=int(os.environ.get("TRANSPILE_FUZZ_EXAMPLES", "40")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(affine_nests.kernels(), st.integers(1, 4), st.integers(0, 2**16))
def test_random_affine_nests_through_the_pipeline(k: ir.Kernel, size: int, seed: int) -> None:
    check_case(k, size, seed)  # the default pipeline, wavefront included, shuffled vs sequential


def test_a_unit_slope_guard_becomes_the_parallel_loop_s_bounds() -> None:
    """nussinov's triangle ``j in i + 1..n`` under ``w = j - i``: the guard ``i + 1 <= w + i && w + i < n``
    is ``w >= 1``, true on ``w``'s whole range, and ``i < n - w``: the loop runs ``0..n - w`` and the
    guard goes (a warp per cell then reads whole rows: reduce-gpu's wavefront rows)."""
    k = text.parse("""
        kernel tri(i32 n, inout i32 T[n + 1][n + 1]) {
          for i in 0..n step -1 {
            for j in i + 1..n {
              T[i][j] = T[i][j - 1] + T[i + 1][j];
            }
          }
        }""", "tri.ir").kernels[0]
    out = wavefront.run(k)
    shown = text.show(ir.Module((), (out,)))
    assert "for w in 1..n {" in shown and "for i in 0..n - w {" in shown, shown
    assert " if (" not in shown, shown
    _check_shuffled(k, out, sizes=(0, 1, 2, 3, 6))


def test_a_steeper_slope_keeps_its_guard() -> None:
    # w = 2 * i + j: the guard bounds 2 * i, which one affine bound of i does not express exactly
    k = text.parse("""
        kernel steep(i32 n, inout f64 A[n + 2][n + 2]) {
          for i in 1..n {
            for j in 1..n {
              A[i][j] = A[i - 1][j + 1] + A[i][j - 1];
            }
          }
        }""", "steep.ir").kernels[0]
    out = wavefront.run(k)
    shown = text.show(ir.Module((), (out,)))
    assert "w - 2 * i" in shown and " if (" in shown, shown
    _check_shuffled(k, out, sizes=(0, 1, 2, 3, 6))

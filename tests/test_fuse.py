"""Tests for passes/fuse.py: needless splits fused back, fusion-preventing dependences respected."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, distribute, fuse, interchange, map_gpu
from tests import affine_nests, polybench, strategies
from tests.test_map_gpu import assert_preserves_semantics, jacobi_1d
from transpile import ir, pipeline
from transpile.frontend import c as cfront
from transpile.ir import text


def _k(body: str, params: str = "i32 n, inout f64 A[n], inout f64 B[n], in f64 x[n]") -> ir.Kernel:
    return text.parse_kernel(f"kernel k({params}) {{\n{body}\n}}\n")


def test_registered() -> None:
    assert REGISTRY["fuse"] is fuse


def test_adi_like_pieces_fuse_into_one_loop() -> None:
    params = "i32 n, f64 a, inout f64 p[n][n]"
    before = _k("""
      for i in 1..n - 1 { p[i][0] = 0.0; }
      for i in 1..n - 1 { for j in 1..n - 1 { p[i][j] = -a / (a * p[i][j - 1] + 1.0); } }""", params)
    after = _k("""
      for i in 1..n - 1 {
        p[i][0] = 0.0;
        for j in 1..n - 1 { p[i][j] = -a / (a * p[i][j - 1] + 1.0); }
      }""", params)
    assert fuse.run(before) == after


def test_forward_dependence_fuses() -> None:
    # B(i) reads A[i], written by the first loop at the same i: order kept after fusion.
    k = _k("for i in 0..n { A[i] = x[i]; }\nfor i in 0..n { B[i] = A[i]; }")
    assert fuse.run(k) == _k("for i in 0..n { A[i] = x[i]; B[i] = A[i]; }")


def test_unrolled_pieces_of_one_step_fuse() -> None:
    # an unrolled loop split by distribution: the pieces share their step-4 header and fuse back (normalize
    # gives the fused loop unit step later), one launch instead of four
    k = _k("for i in 0..n - 3 step 4 { A[i] = x[i]; }\nfor i in 0..n - 3 step 4 { A[i + 1] = x[i + 1]; }")
    assert fuse.run(k) == _k("for i in 0..n - 3 step 4 { A[i] = x[i]; A[i + 1] = x[i + 1]; }")
    # different steps are different headers
    k = _k("for i in 0..n step 2 { A[i] = x[i]; }\nfor i in 0..n step 3 { B[i] = x[i]; }")
    assert fuse.run(k) is k


def test_fusion_preventing_dependence_is_respected() -> None:
    # B(i) reads A[i + 1]: fused, it would run before A(i + 1) writes it (a backward,
    # carried dependence), so the loops stay apart.
    k = _k("for i in 0..n - 1 { A[i] = x[i]; }\nfor i in 0..n - 1 { B[i] = A[i + 1]; }")
    assert fuse.run(k) is k


def test_fusion_never_makes_a_parallel_loop_sequential() -> None:
    # Legal to fuse (B(i) reads A[i - 1], written earlier), but the fused i would carry it.
    k = _k("for i in 1..n { A[i] = x[i]; }\nfor i in 1..n { B[i] = A[i - 1]; }")
    assert fuse.run(k) is k


def test_perfect_nests_fuse_at_full_depth() -> None:
    params = "i32 n, inout f64 C[n][n], in f64 D[n][n]"
    k = _k("""
      for i in 0..n { for j in 0..n { C[i][j] *= 2.0; } }
      for i in 0..n { for j in 0..n { C[i][j] += D[i][j]; } }""", params)
    out = fuse.run(k)
    assert out == _k("for i in 0..n { for j in 0..n { C[i][j] *= 2.0; C[i][j] += D[i][j]; } }", params)
    (launch,) = [s for s in map_gpu.run(out).body if isinstance(s, ir.Launch)]
    assert [n.par for n in ir.walk(launch) if isinstance(n, ir.For)] == ["y", "x"]


def test_depth_two_nest_is_not_fused_into_depth_one() -> None:
    # Fusing would leave `for i { for j ..; x-stmt }`: j would lose its thread dimension.
    params = "i32 n, inout f64 C[n][n], inout f64 A[n]"
    k = _k("""
      for i in 0..n { for j in 0..n { C[i][j] *= 2.0; } }
      for i in 0..n { A[i] = 0.0; }""", params)
    assert fuse.run(k) is k


def test_different_bounds_are_not_fused() -> None:
    k = _k("for i in 0..n { A[i] = x[i]; }\nfor i in 1..n { B[i] = x[i]; }")
    assert fuse.run(k) is k


def test_sequential_loops_are_not_fused() -> None:
    k = _k("for i in 1..n { A[i] = A[i - 1]; }\nfor i in 1..n { B[i] = B[i - 1]; }")
    assert fuse.run(k) is k


def test_stencil_sweeps_under_a_time_loop_stay_apart() -> None:
    # jacobi-1d: A(i) = f(B[i - 1..i + 1]) after B(i) = f(A[i - 1..i + 1]): fused, A[i] would be
    # overwritten before B(i + 1) reads it.
    k = jacobi_1d()
    assert fuse.run(k) is k


def test_fusion_never_takes_away_a_gpu_reduction() -> None:
    # mvt: alone, the A[i][j] row sweep becomes a warp-per-row reduction (reduce-gpu);
    # fused as they stand (i outer) with the A[j][i] sweep, reduce-gpu would leave the mixed body
    # sequential.  Instead the second nest is interchanged and both become one sweep nest
    # (rule (d)), marked on its outer loop, reading A[i][j] once.
    params = "i32 n, inout f64 x1[n], inout f64 x2[n], in f64 y[n], in f64 A[n][n]"
    k = _k("""
      for i in 0..n { for j in 0..n { x1[i] += A[i][j] * y[j]; } }
      for i in 0..n { for j in 0..n { x2[i] += A[j][i] * y[j]; } }""", params)
    (sweep,) = fuse.run(k).body
    assert isinstance(sweep, ir.For) and sweep.reduce == ("+", "+")
    assert text.show(ir.Module((), (dataclasses.replace(k, body=(sweep,)),))).count("A[i][j]") == 2
    # Without reassociation reduce-gpu marks neither float sum: nothing to lose, so they fuse as
    # they stand (no sweep: it would reassociate).
    fused = fuse.run(k, reassociate=False)
    assert fused is not k and len(fused.body) == 1 and not fused.body[0].reduce  # type: ignore[union-attr]


# Kernels with needless splits: fusion must remove launches there, and nowhere add one.
# (Compared against the same pipeline with fuse turned off, so other passes may change
# the absolute counts.)
_TARGETED = {"2mm", "3mm", "adi", "correlation", "covariance", "gemm", "gesummv", "syrk"}


def _launches(module: ir.Module) -> int:
    (k,) = module.kernels
    return sum(isinstance(n, ir.Launch) for n in ir.walk(k))


@pytest.mark.parametrize("name", polybench.NAMES)
def test_polybench_fusion_never_adds_launches(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = polybench.spec(name)
    module = cfront.parse_file(str(spec.path), function=spec.function)
    fused = _launches(pipeline.lower(module))
    monkeypatch.setattr(fuse, "run", lambda k, **_: k)
    unfused = _launches(pipeline.lower(module))
    assert fused <= unfused
    if name in _TARGETED:
        assert fused < unfused


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.modules())
def test_preserves_semantics(module: ir.Module) -> None:
    assert_preserves_semantics(module, lambda k: fuse.run(interchange.run(distribute.run(k))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(affine_nests.kernels(), st.integers(1, 4), st.integers(0, 2**16))
def test_affine_nests_fused_and_shuffled_equal_sequential(k: ir.Kernel, n: int, seed: int) -> None:
    # distribute -> fuse (no interchange: fusion on distribution's own output), then
    # map-gpu marks par loops and the shuffled interpreter checks every mark.
    affine_nests.check_case(k, n, seed, lower=lambda k: ir.Module((), (map_gpu.run(fuse.run(distribute.run(k))),)))

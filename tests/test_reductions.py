"""Reduction recognition on IR text kernels."""

from __future__ import annotations

from passes import reductions
from transpile.ir import text


def found(src: str) -> list[tuple[str, str, str]]:
    (k,) = text.parse(src).kernels
    return [(r.loop_var, r.name, r.op) for r in reductions.analyze(k)]


def test_gemm_inner_loop() -> None:
    assert found("""
kernel g(i32 n, inout f64 C[n][n], in f64 A[n][n], in f64 B[n][n]) {
  for i in 0..n { for j in 0..n { for k in 0..n { C[i][j] += A[i][k] * B[k][j]; } } }
}""") == [("k", "C", "+")]


def test_two_sums_share_a_loop() -> None:
    assert found("""
kernel g(i32 n, inout f64 s[n], inout f64 t[n], in f64 A[n][n]) {
  for i in 0..n { for j in 0..n { s[i] = A[i][j] + s[i]; t[i] = fmax(t[i], A[j][i]); } }
}""") == [("j", "s", "+"), ("j", "t", "max")]


def test_scalar_sum_and_subtraction() -> None:
    assert found("""
kernel g(i32 n, in f64 x[n], out f64 r[1]) {
  f64 s = 0.0;
  for i in 0..n { s -= x[i]; }
  r[0] = s;
}""") == [("i", "s", "+")]


def test_observed_partial_sum_is_not_a_reduction() -> None:
    assert found("""
kernel g(i32 n, in f64 x[n], out f64 p[n]) {
  f64 s = 0.0;
  for i in 0..n { s += x[i]; p[i] = s; }
}""") == []


def test_reversed_subtraction_is_not_a_reduction() -> None:
    assert found("""
kernel g(i32 n, in f64 x[n], out f64 r[1]) {
  f64 s = 0.0;
  for i in 0..n { s = x[i] - s; }
  r[0] = s;
}""") == []


def test_other_carried_dependence_disqualifies_the_loop() -> None:
    assert found("""
kernel g(i32 n, inout f64 x[n], inout f64 s[1]) {
  for i in 1..n { s[0] += x[i]; x[i] = x[i - 1] * 0.5; }
}""") == []

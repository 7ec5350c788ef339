"""passes/normalize.py: parallel loops of non-unit step count from zero by one, and compute the same."""

from __future__ import annotations

import numpy as np
import pytest

from passes import REGISTRY, normalize
from tests.interp_check import assert_same_results
from transpile import ir
from transpile.ir import check as ircheck
from transpile.ir import text


def _kernel(body: str) -> ir.Module:
    return text.parse("kernel k(i32 n, inout f32 a[n], in f32 b[n]) {\n" + body + "}\n")


@pytest.mark.parametrize("n", [0, 1, 2, 3, 8])
def test_unsigned_counters_keep_empty_ranges_empty(n: int) -> None:
    m = text.parse("kernel k(u32 n, inout f32 a[n + 3], in f32 b[n + 3]) {\n"
                   "for i in 3..n step 2 { a[i] = b[i] + 1.0f; }\n}\n")
    got = _run(m)
    ircheck.check(got)
    rng = np.random.default_rng(n)
    args = {"n": np.uint32(n), "a": rng.uniform(-1, 1, n + 3).astype(np.float32),
            "b": rng.uniform(-1, 1, n + 3).astype(np.float32)}
    assert_same_results(m, got, "k", args, ["a"])


def _run(m: ir.Module) -> ir.Module:
    return ir.Module(m.funcs, tuple(normalize.run(k) for k in m.kernels))


def test_registered() -> None:
    assert REGISTRY["normalize"] is normalize


@pytest.mark.parametrize("body", [
    "for i in 0..n step 2 { a[i] = b[i] + 1.0f; }",
    "for i in 1..n step 3 { a[i] = a[i - 1] * b[i]; }",  # reads what no iteration writes
    "for i in 0..n step -2 { a[i] = b[i] * 2.0f; }",  # n - 1, n - 3, ...
    "for i in 0..n step -1 { a[i] = b[n - 1 - i]; }",
    "for i in 0..n { for j in i..n step 2 { a[j] = b[j]; } }",
])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 10])
def test_parallel_strided_loops_get_unit_steps_and_keep_their_results(body: str, n: int) -> None:
    m = _kernel(body)
    got = _run(m)
    ircheck.check(got)
    loops = [s for s in ir.walk(got) if isinstance(s, ir.For)]
    assert loops[-1].step == 1, text.show(got)
    rng = np.random.default_rng(n)
    args = {"n": n, "a": rng.uniform(-1, 1, n).astype(np.float32), "b": rng.uniform(-1, 1, n).astype(np.float32)}
    assert_same_results(m, got, "k", args, ["a"])


@pytest.mark.parametrize("body", [
    "for i in 2..n step 2 { a[i] = a[i - 2] + b[i]; }",  # a recurrence: left as it is
    "for i in 0..n { a[i] = b[i]; }",  # unit step: nothing to do
])
def test_leaves_carried_and_unit_step_loops_alone(body: str) -> None:
    m = _kernel(body)
    assert normalize.run(m.kernels[0]) is m.kernels[0]

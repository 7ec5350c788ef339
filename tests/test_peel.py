"""passes/peel.py: a loop whose first iteration writes what every iteration reads runs that one alone."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, deps, map_gpu, peel
from tests.interp_check import assert_same_results
from transpile import ir
from transpile.ir import check as ircheck
from transpile.ir import text

HEAD = "kernel k(i32 n, inout f32 a[n + 8], inout f32 b[n + 8]) {\n"


def _module(body: str) -> ir.Module:
    return text.parse(HEAD + body + "}\n")


def _check(m: ir.Module) -> ir.Module:
    got = ir.Module(m.funcs, tuple(peel.run(k) for k in m.kernels))
    ircheck.check(got)
    mapped = ir.Module(got.funcs, tuple(map_gpu.run(k, atomics=False) for k in got.kernels))
    ircheck.check(mapped)
    for n in (0, 1, 2, 5):
        rng = np.random.default_rng(n)
        args = {"n": n, "a": rng.uniform(-1, 1, n + 8).astype(np.float32),
                "b": rng.uniform(-1, 1, n + 8).astype(np.float32)}
        assert_same_results(m, mapped, "k", args, ["a", "b"], shuffles=(None, n, n + 9))
    return got


def test_registered() -> None:
    assert REGISTRY["peel"] is peel


@pytest.mark.parametrize("body", [
    "for i in 0..n { a[i] = a[0] + b[i]; }",
    "for i in 2..n { a[i + 1] = a[3] * b[i]; }",
    "for i in 0..n { f32 t = a[0] * 2.0f;\na[i] = t + b[i]; }",  # a local: renamed in the copy
    "for j in 0..2 { for i in 0..n { a[i] = a[0] + b[i + j]; } }",
])
def test_peeled_loops_are_parallel_and_compute_the_same(body: str) -> None:
    m = _module(body)
    k = m.kernels[0]
    got = _check(m)
    assert deps.parallel_count(got.kernels[0]) > deps.parallel_count(k), text.show(got)


@pytest.mark.parametrize("body", [
    "for i in 0..n { a[i] = a[1] + b[i]; }",  # a[1] is written by the second iteration
    "for i in 1..n { a[i] = a[i - 1] + b[i]; }",  # a recurrence
    "for i in 0..n { a[i] = a[0] + b[i];\nb[i + 1] = b[i] * 2.0f; }",  # peeling frees nothing
    "for i in 0..n { a[i] = b[i] + 1.0f; }",  # parallel already
])
def test_leaves_other_loops_alone(body: str) -> None:
    k = _module(body).kernels[0]
    assert peel.run(k) is k


@st.composite
def _bodies(draw: st.DrawFn) -> str:
    stmts = []
    for _ in range(draw(st.integers(1, 3))):
        lo, d, c = draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(st.integers(0, 4))
        x, y = draw(st.sampled_from((("a", "b"), ("b", "a"), ("a", "a"))))
        extra = draw(st.sampled_from(("", f"\n{y}[i] = {y}[i] + 1.0f;", f"\n{x}[{c}] = {x}[{c}] * 0.5f;")))
        stmts.append(f"for i in {lo}..n {{ {x}[i + {d}] = {x}[{c}] + {y}[i];{extra} }}")
    return "\n".join(stmts)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_bodies())
def test_peeled_and_mapped_loops_shuffled_equal_the_original(body: str) -> None:
    _check(_module(body))

"""passes/hoist.py: invariant quotients in subscripts and bounds are named at the entry; same results."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, deps, hoist, map_gpu
from tests.interp_check import assert_same_results
from transpile import ir
from transpile.ir import check as ircheck
from transpile.ir import text

HEAD = "kernel k(i32 n, i32 m, inout f32 a[n + 8], in f32 b[n + 8]) {\n"


def _module(body: str) -> ir.Module:
    return text.parse(HEAD + body + "}\n")


def _args(n: int, m: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    return {"n": n, "m": m, "a": rng.uniform(-1, 1, n + 8).astype(np.float32),
            "b": rng.uniform(-1, 1, n + 8).astype(np.float32)}


def _check(m: ir.Module) -> ir.Module:
    got = ir.Module(m.funcs, tuple(hoist.run(k) for k in m.kernels))
    ircheck.check(got)
    mapped = ir.Module(got.funcs, tuple(map_gpu.run(k, atomics=False) for k in got.kernels))
    ircheck.check(mapped)
    for n in (0, 1, 2, 5, 8):
        for mv in (-7, 3):
            assert_same_results(m, mapped, "k", _args(n, mv, 3 * n + abs(mv)), ["a"], shuffles=(None, n, n + 5))
    return got


def test_registered() -> None:
    assert REGISTRY["hoist"] is hoist


@pytest.mark.parametrize("body", [
    "for i in 0..n / 2 { a[i] = a[i + n / 2] + b[i]; }",  # disjoint halves
    "for i in 0..(n + 1) / 3 { a[i + 2 * ((n + 1) / 3)] = a[i] * b[i]; }",
    "for i in 0..n / 4 { for j in 0..2 { a[2 * i + j] = a[2 * (i + n / 4) + j] + b[i]; } }",
])
def test_halves_become_parallel_and_compute_the_same(body: str) -> None:
    m = _module(body)
    k = m.kernels[0]
    got = _check(m)
    assert deps.parallel_count(got.kernels[0]) > deps.parallel_count(k), text.show(got)


@pytest.mark.parametrize("body", [
    "for i in 0..n { a[i] = b[i] + 1.0f; }",  # no quotient
    "for i in 0..n { a[i] = a[i + m / (n + 1)] + b[i]; }",  # divides by a variable
    "for i in 0..n { a[i] = a[i / 2] + b[i]; }",  # a loop variable divided: not invariant
    "for i in 0..2 { a[i] = b[i] * 2.0f;\n m = m + 1; }\na[0] = a[m % 2 + 1];",  # m is assigned
])
def test_leaves_variant_or_unsafe_quotients_alone(body: str) -> None:
    k = _module(body).kernels[0]
    assert hoist.run(k) is k


_TERMS = ("n / 2", "n / 3", "(n + 1) / 2", "n % 3", "(m % 3) + 2", "n / 2 / 2")


@st.composite
def _bodies(draw: st.DrawFn) -> str:
    stmts = []
    for _ in range(draw(st.integers(1, 3))):
        hi, off, src = (draw(st.sampled_from(_TERMS)) for _ in range(3))
        sign = draw(st.sampled_from(("+", "-")))
        stmts.append(f"for i in 0..{hi} {{ a[i + {off}] = a[i {sign} ({src})] + b[i]; }}"
                     if sign == "+" else f"for i in {src}..{hi} {{ a[i] = a[i - ({src})] * b[i]; }}")
    return "\n".join(stmts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_bodies())
def test_named_and_mapped_quotients_shuffled_equal_the_original(body: str) -> None:
    _check(_module(body))

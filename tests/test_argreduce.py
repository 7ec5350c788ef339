"""passes/argreduce.py: argmax/argmin loops become two reductions, bit for bit C's value and first index."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, argreduce, map_gpu, reduce_gpu
from transpile import ir
from transpile.ir import check as ircheck
from transpile.ir import interp, text

HEAD = "kernel k(i32 n, in f32 a[n + 2], inout f32 r[1], inout i32 q[1]) {\n"
# Values with ties, both zeros, infinities and NaN: where a pair reduction's tie rule shows.
VALUES = np.array([-1.0, 0.0, -0.0, 1.0, 2.0, np.nan, np.inf, -np.inf, 0.5], np.float32)


def _module(loop: str) -> ir.Module:
    return text.parse(HEAD + "f32 m = r[0];\ni32 k = q[0];\n" + loop + "\nr[0] = m;\nq[0] = k;\n}\n")


def _lowered(m: ir.Module) -> ir.Module:
    out = ir.Module(m.funcs, tuple(argreduce.run(k) for k in m.kernels))
    ircheck.check(out)
    out = ir.Module(out.funcs, tuple(map_gpu.run(reduce_gpu.run(k)) for k in out.kernels))
    ircheck.check(out)
    return out


def _same_bits(m: ir.Module, got: ir.Module, a: np.ndarray, r0: float, q0: int) -> None:
    n = len(a) - 2
    args = {"n": n, "a": a, "r": np.array([r0], np.float32), "q": np.array([q0], np.int32)}
    want = interp.run(m, "k", {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()})
    for shuffle in (None, 1, 2, 3):
        have = interp.run(got, "k", {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()},
                          shuffle=shuffle)
        assert have["q"][0] == want["q"][0], (a, r0, q0, shuffle)
        assert have["r"].view(np.int32)[0] == want["r"].view(np.int32)[0], (a, r0, q0, shuffle, have["r"], want["r"])


def test_registered() -> None:
    assert REGISTRY["argreduce"] is argreduce


LOOPS = [
    "for i in 0..n { if (a[i] > m) { m = a[i];\nk = i; } }",
    "for i in 0..n { if (m > a[i]) { k = i;\nm = a[i]; } }",
    "for i in 1..n { if (a[i] >= m) { m = a[i];\nk = i; } }",
    "for i in 0..n step -1 { if (fabsf(a[i]) > m) { m = fabsf(a[i]);\nk = i; } }",
    "for i in 0..n step 2 { if (a[i + 1] * 2.0f <= m) { m = a[i + 1] * 2.0f;\nk = i; } }",
]


@pytest.mark.parametrize("loop", LOOPS)
def test_argmax_loops_become_two_reductions(loop: str) -> None:
    m = _module(loop)
    got = _lowered(m)
    unit = "step 2" not in loop  # reduce-gpu launches unit-step reductions (normalize frees only maps)
    assert sum(1 for s in ir.statements(got) if isinstance(s, ir.For) and s.reduce) == 2 * unit, text.show(got)
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 9):
        _same_bits(m, got, rng.choice(VALUES, n + 2), float(rng.choice(VALUES)), 7)


@pytest.mark.parametrize("loop", [
    "for i in 0..n { if (a[i] > m) { m = a[i];\nk = i + 1; } }",  # not the loop variable
    "for i in 0..n { if (a[i] > m) { m = a[i] + 1.0f;\nk = i; } }",  # keeps another value than it compares
    "for i in 0..n { if (a[i] > m + 1.0f) { m = a[i];\nk = i; } }",
    "for i in 0..n { if (a[i] > m) { m = a[i];\nk = i; }\nr[0] = m; }",  # more in the body
])
def test_leaves_other_loops_alone(loop: str) -> None:
    k = _module(loop).kernels[0]
    assert argreduce.run(k) is k


@st.composite
def _loops(draw: st.DrawFn) -> str:
    e = draw(st.sampled_from(("a[i]", "fabsf(a[i])", "a[i + 1] - a[i]", "-a[i]")))
    op = draw(st.sampled_from((">", ">=", "<", "<=")))
    cond = f"{e} {op} m" if draw(st.booleans()) else f"m {dict(zip('<>', '><')).get(op[0])}{op[1:]} {e}"
    step = draw(st.sampled_from(("", " step 2", " step -1", " step -3")))
    lo = draw(st.integers(0, 2))
    body = [f"m = {e};", "k = i;"]
    if draw(st.booleans()):
        body.reverse()
    return f"for i in {lo}..n{step} {{ if ({cond}) {{ {body[0]}\n{body[1]} }} }}"


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_loops(), st.lists(st.sampled_from(list(range(len(VALUES)))), min_size=2, max_size=12),
       st.sampled_from(list(range(len(VALUES)))))
def test_two_reductions_shuffled_equal_c_bit_for_bit(loop: str, picks: list[int], entry: int) -> None:
    m = _module(loop)
    got = _lowered(m)
    assert "step 2" in loop or "step -3" in loop or any(isinstance(s, ir.For) and s.reduce
                                                        for s in ir.statements(got)), text.show(got)
    _same_bits(m, got, VALUES[picks], float(VALUES[entry]), -5)

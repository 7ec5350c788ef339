"""passes/sink_guard.py: an invariant ``if`` around loops moves into them; same results, loops launched."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, map_gpu, sink_guard
from tests.interp_check import assert_same_results
from transpile import ir
from transpile.ir import check as ircheck
from transpile.ir import text

HEAD = "kernel k(i32 n, i32 flag, inout f32 a[n + 4], inout f32 b[n + 4], inout f32 s[1]) {\n"

# Conditions: invariant unless a branch writes what they read (a[0], s[0], flag never).
CONDS = ("flag > 0", "flag == 0", "n > 2", "a[0] > 0.0f", "s[0] < 0.5f")
# Branch statements: parallel loops, nests, a recurrence, writes of what a condition reads, a declaration.
PIECES = (
    "for i in 0..n { a[i] = b[i] + 1.0f; }",
    "for i in 0..n { b[i + 1] = a[i + 2] * 2.0f; }",
    "for i in 0..n { for j in 0..n { a[i] = a[i] + b[j]; } }",
    "for i in 1..n { a[i] = a[i - 1] + b[i]; }",
    "for i in 0..n { if (b[i] > 0.0f) { a[i + 1] = 0.0f; } }",
    "a[0] = a[0] - 0.75f;",
    "s[0] = s[0] + b[1];",
    "for i in 0..n { s[0] = s[0] + a[i]; }",
    "f32 t = b[2];\na[3] = t;",
)


def _module(body: str) -> ir.Module:
    return text.parse(HEAD + body + "}\n")


def _args(n: int, flag: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    return {"n": n, "flag": flag, "a": rng.uniform(-1, 1, n + 4).astype(np.float32),
            "b": rng.uniform(-1, 1, n + 4).astype(np.float32), "s": rng.uniform(0, 1, 1).astype(np.float32)}


def _check(m: ir.Module) -> ir.Module:
    got = ir.Module(m.funcs, tuple(sink_guard.run(k) for k in m.kernels))
    ircheck.check(got)
    mapped = ir.Module(got.funcs, tuple(map_gpu.run(k, atomics=False) for k in got.kernels))  # exact
    ircheck.check(mapped)
    for n in (0, 1, 3, 6):
        for flag in (0, 1):
            assert_same_results(m, mapped, "k", _args(n, flag, 7 * n + flag), ["a", "b", "s"],
                                shuffles=(None, n, n + 11))
    return got


def test_registered() -> None:
    assert REGISTRY["sink-guard"] is sink_guard


@pytest.mark.parametrize("body", [
    "if (!flag) {\nfor i in 0..n { a[i] = b[i]; }\n}",  # goto over a loop
    "if (flag == 0) {\nfor i in 0..n { a[i] = b[i]; }\n} else {\nfor i in 0..n { a[i] = 2.0f * b[i]; }\n}",  # switch
    "if (n > 2) {\ns[0] = 1.0f;\nfor i in 0..n { for j in 0..n { a[i] = a[i] + b[j]; } }\n}",
    "for t in 0..2 {\nif (flag > t) {\nfor i in 0..n { a[i] = b[i] * a[i]; }\n}\n}",
    # the loop writes what the condition reads: the condition's value on entry guards it
    "if (a[0] > 0.0f) {\nfor i in 0..n { a[i] = b[i]; }\n}",
    # a flag the branch sets (an early return's): the same
    "i32 done = 0;\nif (flag > 0) {\ndone = 1;\n}\nif (!done) {\nfor i in 0..n { a[i] = b[i]; }\ndone = 1;\n}\ns[0] = f32(done);",
    # a declaration scoped to the branch (names are unique in a kernel): declared before the if
    "if (flag > 0) {\nf32 t = b[1];\nfor i in 0..n { a[i] = t; }\n}",
])
def test_guarded_loops_are_launched_and_compute_the_same(body: str) -> None:
    got = _check(_module(body))
    mapped = map_gpu.run(got.kernels[0])
    assert any(isinstance(s, ir.For) and s.par for s in ir.statements(mapped)), text.show(got)


@pytest.mark.parametrize("body", [
    "if (flag > 0) {\nfor i in 0..b[0] > 0.0f ? n : 1 { a[i] = b[i]; }\n}",  # a bound reading an array
    "if (flag > 0) {\nfor i in 0..n / flag { a[i] = b[i]; }\n}",  # a bound dividing by a variable
    "i32 m = 0;\nif (flag > 0) {\nm = n;\nfor i in 0..m { a[i] = b[i]; }\n}",  # a bound the branch assigns
])
def test_leaves_variant_or_unsafe_guards_alone(body: str) -> None:
    k = _module(body).kernels[0]
    assert sink_guard.run(k) is k


@st.composite
def _bodies(draw: st.DrawFn) -> str:
    def block(depth: int) -> list[str]:
        out = []
        for _ in range(draw(st.integers(1, 3))):
            if depth < 2 and draw(st.booleans()):
                then, orelse = block(depth + 1), block(depth + 1) if draw(st.booleans()) else []
                cond = draw(st.sampled_from(CONDS))
                out.append(f"if ({cond}) {{\n" + "\n".join(then) + "\n}"
                           + (" else {\n" + "\n".join(orelse) + "\n}" if orelse else ""))
            else:
                out.append(draw(st.sampled_from(PIECES)))
        return out

    return "\n".join(block(0))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_bodies())
def test_sunk_and_mapped_guards_shuffled_equal_the_original(body: str) -> None:
    try:
        m = _module(body)
    except Exception:  # a declaration drawn twice in one scope
        return
    _check(m)


def test_narrow_conditions_and_declarations_give_valid_ir() -> None:
    """A condition of a narrow type its branch writes (a u8 element) is snapshotted as C promotes it, and
    a u8 declared in a branch is zeroed before the if, neither with a literal of type u8 (found by
    hypothesis in tests/test_map_gpu.py: 'literal of type u8')."""
    m = text.parse("kernel k(i32 n, inout u8 c[n + 1], inout f32 a[n + 4]) {\n"
                   "if (c[0]) { c[0] = c[0] + 1;\nu8 t = c[0];\nfor i in 0..n { a[i] = a[i] + t; } }\n"
                   "else { for i in 0..n { a[i] = 2.0f * a[i]; } }\n}\n")
    got = ir.Module(m.funcs, tuple(sink_guard.run(k) for k in m.kernels))
    assert got.kernels[0] is not m.kernels[0]
    ircheck.check(got)
    for n in (0, 2, 5):
        for first in (0, 1, 255):
            rng = np.random.default_rng(n)
            c = rng.integers(0, 255, n + 1).astype(np.uint8)
            c[0] = first
            assert_same_results(m, got, "k", {"n": n, "c": c, "a": rng.uniform(-1, 1, n + 4).astype(np.float32)},
                                ["c", "a"])

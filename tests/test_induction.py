"""passes/induction.py and passes/constprop.py: counters and copies in subscripts become affine forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from passes import REGISTRY, constprop, deps, induction, privatize
from tests.interp_check import assert_same_results
from transpile import ir
from transpile.ir import check as ircheck
from transpile.ir import text

HEAD = "kernel k(i32 n, i32 m, inout f32 a[4 * n + 4], in f32 b[4 * n + 4], inout i32 q[1]) {\n"


def _module(body: str) -> ir.Module:
    return text.parse(HEAD + body + "}\n")


def _parallel(k: ir.Kernel) -> bool:
    k = privatize.run(k)  # a copy assigned in the body is private to its iteration
    ids = deps.loop_ids(k)
    loop = next(s for s in ir.statements(k) if isinstance(s, ir.For))
    return ids[id(loop)] in deps.parallel_loops(k)


CASES = {  # (pass, body): each loop is parallel only after the pass
    "iv_plus_one": (induction, "i32 j = 0;\nfor i in 0..n { a[j] = b[i];\nj += 1; }\nq[0] = j;"),
    "iv_by_two_read_first": (induction, "i32 j = 1;\nfor i in 0..n { a[i] = b[j] + b[j + 1];\nj += 2; }\nq[0] = j;"),
    "iv_downward": (induction, "i32 j = n;\nfor i in 0..n step -1 { j -= 1;\na[j] = b[i]; }\nq[0] = j;"),
    "iv_invariant_step": (induction, "i32 j = 0;\nfor i in 0..n { a[j] = b[i];\nj += 3; }\nq[0] = j;"),
    # two counters into one array, from 0 and from n: comparable only through their initial values
    "two_walkers": (induction, "i32 lo = 0;\ni32 hi = n;\nfor i in 0..n { a[lo] = b[i];\na[hi] = -b[i];\n"
                               "lo += 1;\nhi += 1; }\nq[0] = hi;"),
    # a step both branches take first (TSVC s124) or last: taken out of the if
    "both_branches_first": (induction, "i32 j = 0 - 1;\nfor i in 0..n { if (b[i] > 0.0f) { j += 1;\na[j] = b[i]; } "
                                       "else { j += 1;\na[j] = -b[i]; } }\nq[0] = j;"),
    "both_branches_last": (induction, "i32 j = 0;\nfor i in 0..n { if (b[i] > 0.0f) { a[j] = b[i];\nj += 2; } "
                                      "else { a[j] = 1.0f;\nj += 2; } }\nq[0] = j;"),
    "copy_decl": (constprop, "for i in 0..n { i32 j = i + m;\na[j] = a[j] + b[i]; }\nq[0] = 0;"),
    "const_decl": (constprop, "i32 c = 2;\nfor i in 0..n { a[c * i] = a[c * i + 1] + b[i]; }\nq[0] = c;"),
    "copy_assign": (constprop, "i32 j;\nfor i in 0..n { j = n - i;\na[j] = b[j]; }\nq[0] = 0;"),
}


def test_registered() -> None:
    assert REGISTRY["induction"] is induction and REGISTRY["constprop"] is constprop


@pytest.mark.parametrize("name", CASES)
def test_loops_become_parallel_and_compute_the_same(name: str) -> None:
    mod, body = CASES[name]
    m = _module(body)
    k = m.kernels[0]
    assert not _parallel(k)
    got = ir.Module(m.funcs, (mod.run(k),))
    ircheck.check(got)
    assert _parallel(got.kernels[0]), text.show(got)
    for n in (0, 1, 5):
        rng = np.random.default_rng(n)
        args = {"n": n, "m": 2, "a": rng.uniform(-1, 1, 4 * n + 4).astype(np.float32),
                "b": rng.uniform(-1, 1, 4 * n + 4).astype(np.float32), "q": np.zeros(1, np.int32)}
        assert_same_results(m, got, "k", args, ["a", "q"])


@pytest.mark.parametrize("body", [
    "i32 j = 0;\nfor i in 0..n { if (b[i] > 0.0f) { a[j] = b[i];\nj += 1; } }\nq[0] = j;",  # packing
    "i32 j = 0;\nfor i in 0..n { a[j] = b[i];\nj += i; }\nq[0] = j;",  # the step varies
    # both branches step j first, but the condition reads j (evaluated before the step)
    "i32 j = 0;\nfor i in 0..n { if (j > 2) { j += 1;\na[j] = b[i]; } else { j += 1;\na[j] = 0.0f; } }\nq[0] = j;",
    # the branches step it by different amounts
    "i32 j = 0;\nfor i in 0..n { if (b[i] > 0.0f) { j += 1;\na[j] = b[i]; } else { j += 2;\na[j] = 0.0f; } }\nq[0] = j;",
])
def test_leaves_conditional_and_variant_counters_alone(body: str) -> None:
    k = _module(body).kernels[0]
    assert induction.run(k) is k


def test_constprop_keeps_what_is_reassigned_or_reads_arrays() -> None:
    k = _module("i32 c = 2;\ni32 d = q[0];\nfor i in 0..n { a[i + d] = b[i + c];\nc += 1; }\nq[0] = c;").kernels[0]
    assert constprop.run(k) is k


NEST_HEAD = "kernel k(i32 n, i32 m, inout f32 a[8 * n * m + 8 * n + 8], in f32 b[m + n + 4], inout i32 q[1]) {\n"


def test_nest_counter_is_substituted_across_the_outer_loop() -> None:
    # k stepped in the inner loop and read across the outer one: k = i * m + j in the body.
    from passes import delinearize

    m = text.parse("kernel k(i32 n, i32 m, out f32 a[n * m], in f32 b[n][m]) {\ni32 c = 0;\n"
                   "for i in 0..n { for j in 0..m { a[c] = b[i][j];\nc += 1; } }\n}\n")
    k = m.kernels[0]
    got = delinearize.run(induction.run(k))
    ircheck.check(ir.Module((), (got,)))
    loops = [s for s in ir.statements(got) if isinstance(s, ir.For)]
    assert deps.loop_ids(got)[id(loops[0])] in deps.parallel_loops(got), text.show(got)


@st.composite
def _nests(draw: st.DrawFn) -> str:
    k0 = draw(st.sampled_from(("0", "1", "n")))
    step = draw(st.integers(1, 3))
    lo_i, lo_j = draw(st.sampled_from(("0", "1"))), draw(st.sampled_from(("0", "1", "2")))
    hi_j = draw(st.sampled_from(("m", "m + 1", "2")))
    pre = draw(st.sampled_from(("", "a[c] = a[c] + 1.0f;\n", "q[0] = q[0] + c;\n")))
    post = draw(st.sampled_from(("", "c += 2;\n", "a[c] = b[i];\n")))
    inner = draw(st.sampled_from(("a[c] = b[j];\nc += {s};", "c += {s};\na[c] = a[c] * 0.5f + b[j];")))
    return (f"i32 c = {k0};\nfor i in {lo_i}..n {{\n{pre}for j in {lo_j}..{hi_j} {{ {inner.format(s=step)} }}\n"
            f"{post}}}\nq[0] = q[0] + c;")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_nests())
def test_nest_counters_substituted_and_mapped_shuffled_equal_the_original(body: str) -> None:
    from passes import map_gpu

    m = text.parse(NEST_HEAD + body + "\n}\n")
    got = ir.Module(m.funcs, tuple(map_gpu.run(induction.run(k), atomics=False) for k in m.kernels))
    ircheck.check(got)
    for n, mm in ((0, 3), (1, 0), (3, 0), (2, 1), (3, 2), (4, 5)):
        rng = np.random.default_rng(n + mm)
        size = 8 * n * mm + 8 * n + 8
        args = {"n": n, "m": mm, "a": rng.uniform(-1, 1, size).astype(np.float32),
                "b": rng.uniform(-1, 1, mm + n + 4).astype(np.float32), "q": np.zeros(1, np.int32)}
        assert_same_results(m, got, "k", args, ["a", "q"], shuffles=(None, n + 1))

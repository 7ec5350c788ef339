"""passes/induction.py and passes/constprop.py: counters and copies in subscripts become affine forms."""

from __future__ import annotations

import numpy as np
import pytest

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
])
def test_leaves_conditional_and_variant_counters_alone(body: str) -> None:
    k = _module(body).kernels[0]
    assert induction.run(k) is k


def test_constprop_keeps_what_is_reassigned_or_reads_arrays() -> None:
    k = _module("i32 c = 2;\ni32 d = q[0];\nfor i in 0..n { a[i + d] = b[i + c];\nc += 1; }\nq[0] = c;").kernels[0]
    assert constprop.run(k) is k

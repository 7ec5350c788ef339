"""passes/wraparound.py: a scalar carried to the next iteration is peeled, and the loop computes the same."""

from __future__ import annotations

import numpy as np
import pytest

from passes import REGISTRY, wraparound
from tests.interp_check import assert_same_results
from transpile import ir
from transpile.ir import check as ircheck
from transpile.ir import text

HEAD = "kernel k(i32 n, inout f32 a[n], in f32 b[n], inout f32 r[1]) {\n"


def _module(body: str) -> ir.Module:
    return text.parse(HEAD + body + "}\n")


def test_registered() -> None:
    assert REGISTRY["wraparound"] is wraparound


@pytest.mark.parametrize("body", [
    "i32 im1 = n - 1;\nfor i in 0..n { a[i] = b[i] + b[im1];\nim1 = i; }\nr[0] = f32(im1);",
    "f32 prev = 0.5f;\nfor i in 0..n { f32 t = b[i] - prev;\na[i] = t;\nprev = b[i]; }\nr[0] = prev;",
    "i32 p1 = 0;\ni32 p2 = 0;\nfor i in 0..n { a[i] = b[p1] + b[p2];\np2 = p1;\np1 = i; }\nr[0] = f32(p2);",
])
def test_peeled_loops_write_no_outer_scalar_and_compute_the_same(body: str) -> None:
    m = _module(body)
    got = ir.Module(m.funcs, (wraparound.run(m.kernels[0]),))
    ircheck.check(got)
    loops = [s for s in got.kernels[0].body if isinstance(s, ir.For)]
    assert loops and not ir.outer_scalars_written(loops[0]), text.show(got)
    for n in (0, 1, 2, 7):
        rng = np.random.default_rng(n)
        args = {"n": n, "a": rng.uniform(-1, 1, n).astype(np.float32), "b": rng.uniform(-1, 1, n).astype(np.float32),
                "r": np.zeros(1, np.float32)}
        assert_same_results(m, got, "k", args, ["a", "r"])


@pytest.mark.parametrize("body", [
    # a true recurrence: the carried value is computed from what the loop writes
    "f32 t = 0.0f;\nfor i in 0..n { a[i] = t;\nt = a[i] + b[i]; }\nr[0] = t;",
    # another carried scalar stays (deriche): peeling would free nothing
    "f32 x = 0.0f;\nf32 y = 0.0f;\nfor i in 0..n { a[i] = b[i] + x + y;\nx = b[i];\ny = a[i]; }\nr[0] = y;",
])
def test_leaves_recurrences_alone(body: str) -> None:
    k = _module(body).kernels[0]
    assert wraparound.run(k) is k

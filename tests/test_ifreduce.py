"""passes/ifreduce.py: accumulations written with if, ternaries and temporaries become 'x = x op e'."""

from __future__ import annotations

import numpy as np
import pytest

from passes import REGISTRY, ifreduce, reductions
from tests.interp_check import assert_same_results
from transpile import ir
from transpile.ir import accum, text
from transpile.ir import check as ircheck

HEAD = "kernel k(i32 n, in f32 a[n], in f32 c[n], out f32 r[1], out i32 q[1]) {\n"


def _module(body: str) -> ir.Module:
    return text.parse(HEAD + body + "}\n")


CASES = {
    "cond_sum": "f32 s = 0.0f;\nfor i in 0..n { if (c[i] > 0.0f) { s += a[i]; } }\nr[0] = s;\nq[0] = 0;",
    "cond_sum_else": "f32 s = 0.0f;\nfor i in 0..n { if (c[i] > a[i]) { s += a[i]; } else { s += c[i]; } }\n"
                     "r[0] = s;\nq[0] = 0;",
    "count": "i32 m = 0;\nfor i in 0..n { if (a[i] > 0.25f) { m += 1; } }\nr[0] = 0.0f;\nq[0] = m;",
    "max_if": "f32 m = a[0];\nfor i in 0..n { if (a[i] > m) { m = a[i]; } }\nr[0] = m;\nq[0] = 0;",
    "min_if_flipped": "f32 m = a[0];\nfor i in 0..n { if (m > c[i] * a[i]) { m = c[i] * a[i]; } }\nr[0] = m;\nq[0] = 0;",
    "max_ternary": "f32 m = a[0];\nfor i in 0..n { m = a[i] >= m ? a[i] : m; }\nr[0] = m;\nq[0] = 0;",
    "via_temp": "f32 s = 0.0f;\nfor i in 0..n { f32 t = a[i] * c[i];\ns = s + t; }\nr[0] = s;\nq[0] = 0;",
}


def _accumulating_loop(k: ir.Kernel) -> bool:
    """Is the loop's body exactly accumulations 'x = x op e' (what reduce-gpu launches as a reduction)?"""
    loop = next(s for s in k.body if isinstance(s, ir.For))
    return all(accum.accumulation(s) is not None for s in loop.body)


def test_registered() -> None:
    assert REGISTRY["ifreduce"] is ifreduce


@pytest.mark.parametrize("name", CASES)
def test_rewritten_loops_are_reductions_with_the_same_results(name: str) -> None:
    m = _module(CASES[name])
    k = m.kernels[0]
    assert not _accumulating_loop(k)
    got = ir.Module(m.funcs, (ifreduce.run(k),))
    ircheck.check(got)
    assert _accumulating_loop(got.kernels[0]) and reductions.analyze(got.kernels[0]), text.show(got)
    for n in (1, 2, 9):
        rng = np.random.default_rng(n)
        args = {"n": n, "a": rng.uniform(-1, 1, n).astype(np.float32), "c": rng.uniform(-1, 1, n).astype(np.float32),
                "r": np.zeros(1, np.float32), "q": np.zeros(1, np.int32)}
        assert_same_results(m, got, "k", args, ["r", "q"], exact=False)


@pytest.mark.parametrize("body", [
    "f32 m = a[0];\nfor i in 0..n { if (a[i] > m) { m = a[i]; } }\nr[0] = m;\nq[0] = 0;",
])
def test_max_by_comparison_needs_reassociate(body: str) -> None:
    k = _module(body).kernels[0]
    assert ifreduce.run(k, reassociate=False) is k


@pytest.mark.parametrize("body", [
    # the condition reads the accumulator: a running test, not a reduction
    "f32 s = 0.0f;\nfor i in 0..n { if (s < 1.0f) { s += a[i]; } }\nr[0] = s;\nq[0] = 0;",
    # the temporary is read again later
    "f32 s = 0.0f;\nfor i in 0..n { f32 t = a[i];\ns = s + t;\nr[0] = t; }\nq[0] = 0;",
    # a max whose new value is not the compared one
    "f32 m = a[0];\nfor i in 0..n { if (a[i] > m) { m = c[i]; } }\nr[0] = m;\nq[0] = 0;",
])
def test_leaves_other_conditionals_alone(body: str) -> None:
    k = _module(body).kernels[0]
    assert ifreduce.run(k) is k


def test_untaken_conditional_sum_keeps_a_negative_zero() -> None:
    # 'if (c) s += e' untaken leaves s as it is; 's += c ? e : 0.0f' would turn -0.0 into +0.0.
    m = _module("f32 s = -0.0f;\nfor i in 0..n { if (c[i] > 2.0f) { s += a[i]; } }\nr[0] = s;\nq[0] = 0;")
    got = ir.Module(m.funcs, (ifreduce.run(m.kernels[0]),))
    args = {"n": 4, "a": np.ones(4, np.float32), "c": np.zeros(4, np.float32), "r": np.zeros(1, np.float32),
            "q": np.zeros(1, np.int32)}
    from transpile.ir import interp

    assert np.signbit(interp.run(got, "k", args)["r"][0])


NAN_START = {
    "max_if": CASES["max_if"],
    "min_if_flipped": CASES["min_if_flipped"],
    "max_ternary": CASES["max_ternary"],
    "max_if_nested": "f32 m = a[0];\nfor j in 0..n { for i in 0..n { if (a[i] > m) { m = a[i]; } } }\n"
                     "r[0] = m;\nq[0] = 0;",
    "max_if_parameter_start": "f32 m = c[0] * 2.0f;\nfor i in 0..n { if (a[i] > m) { m = a[i]; } }\n"
                              "r[0] = m;\nq[0] = 0;",
}


@pytest.mark.parametrize("name", NAN_START)
@pytest.mark.parametrize("nan_at", ["start", "element", "both"])
def test_a_nan_start_stays_nan_and_nan_elements_are_skipped_as_in_c(name: str, nan_at: str) -> None:
    # C's 'if (e > m) m = e' never fires once m is NaN (the verifier's special values draw a[0] = NaN as
    # the start); a bare fmaxf(m, e) would skip the NaN and return the largest element instead.
    m = _module(NAN_START[name])
    got = ir.Module(m.funcs, (ifreduce.run(m.kernels[0]),))
    ircheck.check(got)
    assert reductions.analyze(got.kernels[0]), text.show(got)
    for n in (1, 2, 9):
        rng = np.random.default_rng(n)
        a = rng.uniform(-1, 1, n).astype(np.float32)
        c = rng.uniform(-1, 1, n).astype(np.float32)
        if nan_at in ("start", "both"):
            a[0] = c[0] = np.nan
        if nan_at in ("element", "both") and n > 2:
            a[n // 2] = np.nan
        args = {"n": n, "a": a, "c": c, "r": np.zeros(1, np.float32), "q": np.zeros(1, np.int32)}
        assert_same_results(m, got, "k", args, ["r", "q"], shuffles=(None, 1, 2))


def test_a_constant_start_keeps_the_accumulator_in_place() -> None:
    # m = -inf just before the loop cannot be NaN: fmaxf(m, e) is C's result, no second variable.
    m = _module("f32 m = -1e999f;\nfor i in 0..n { if (a[i] > m) { m = a[i]; } }\nr[0] = m;\nq[0] = 0;")
    got = ifreduce.run(m.kernels[0])
    loop = next(s for s in got.body if isinstance(s, ir.For))
    assert [text.show_stmt(s).strip() for s in loop.body] == ["m = fmaxf(m, a[i]);"]
    assert not any(isinstance(s, ir.If) for s in got.body)


def test_a_max_read_elsewhere_in_its_loop_stays_an_if() -> None:
    body = "f32 m = a[0];\nfor i in 0..n { if (a[i] > m) { m = a[i]; }\nr[0] = m; }\nq[0] = 0;"
    k = _module(body).kernels[0]
    got = ifreduce.run(k)
    assert text.show(ir.Module((), (got,))) == text.show(ir.Module((), (k,)))


@pytest.mark.parametrize(("value", "op"), [
    ("m >= e ? m : e", "max"), ("m > e ? m : e", "max"), ("e <= m ? m : e", "max"), ("e < m ? m : e", "max"),
    ("m <= e ? e : m", "max"), ("e > m ? e : m", "max"), ("m < e ? e : m", "max"), ("e >= m ? e : m", "max"),
    ("m <= e ? m : e", "min"), ("m < e ? m : e", "min"), ("e >= m ? m : e", "min"), ("e > m ? m : e", "min"),
    ("m >= e ? e : m", "min"), ("e < m ? e : m", "min"), ("m > e ? e : m", "min"), ("e <= m ? e : m", "min"),
])
def test_an_integer_conditional_is_an_exact_max_or_min(value: str, op: str) -> None:
    term = value.replace("e", "(a[i] * 3)")
    (k,) = text.parse(f"""kernel k(i32 n, in i32 a[n], out i32 out[1]) {{
  i32 m = a[0];
  for i in 1..n {{
    m = {term};
  }}
  out[0] = m;
}}
""").kernels
    loop = next(s for s in k.body if isinstance(s, ir.For))
    a = accum.accumulation(loop.body[0])
    assert a is not None and a.op == op and text.show_expr(a.term) == "a[i] * 3"
    # the statement rebuilt around another term, and two partials combined, compute the same op
    ten = ir.const(10, ir.I32)
    applied = accum.apply(a, ten)
    assert accum.accumulation(applied) is not None and accum.accumulation(applied).term == ten  # type: ignore[union-attr]
    assert [r.op for r in reductions.analyze(k)] == [op]


@pytest.mark.parametrize("src", [
    "m = m >= a[i] ? a[i] : a[i];",  # both branches the term
    "m = m + 1 >= a[i] ? m : a[i];",  # the condition compares something else
    "m = m >= a[i] ? m : a[i] + 1;",  # the branch is not the compared term
])
def test_other_integer_conditionals_are_not_accumulations(src: str) -> None:
    (k,) = text.parse(f"""kernel k(i32 n, in i32 a[n], out i32 out[1]) {{
  i32 m = a[0];
  for i in 1..n {{
    {src}
  }}
  out[0] = m;
}}
""").kernels
    loop = next(s for s in k.body if isinstance(s, ir.For))
    assert accum.accumulation(loop.body[0]) is None


def test_an_integer_max_by_if_becomes_a_reduction_without_reassociate() -> None:
    (k,) = text.parse("""kernel k(i32 n, in i64 a[n], inout i64 best[4]) {
  for i in 0..n {
    if (a[i] > best[2]) {
      best[2] = a[i];
    }
  }
}
""").kernels
    got = ifreduce.run(k, reassociate=False)
    assert "best[2] = a[i] > best[2] ? a[i] : best[2];" in text.show(ir.Module((), (got,)))
    assert [r.op for r in reductions.analyze(got)] == ["max"]
    rng = np.random.default_rng(5)
    args = {"n": 40, "a": rng.integers(-1000, 1000, 40, dtype=np.int64), "best": np.array([0, 0, -5, 0], np.int64)}
    lowered = ir.Module((), (REGISTRY["map-gpu"].run(REGISTRY["reduce-gpu"].run(got)),))
    assert_same_results(ir.Module((), (k,)), lowered, "k", args, ["best"], shuffles=(None, 1, 2, 3))


def test_a_warp_shuffles_an_integer_max_once_per_step() -> None:
    """The combined conditional names its operand twice; a shuffle there would run in one branch only,
    and the lanes that skip it leave the others waiting (the simulator died with 'unspecified launch
    failure' before the shuffled value went into a local)."""
    from transpile import cuda, pipeline

    module = text.parse("""kernel k(i32 n, i32 m, in i32 a[n][m], inout i32 best[n]) {
  for i in 0..n {
    best[i] = a[i][0];
    for j in 1..m {
      best[i] = best[i] >= a[i][j] ? best[i] : a[i][j];
    }
  }
}
""")
    code = cuda.emit(pipeline.lower(module), source="k.ir")
    steps = [ln for ln in code.splitlines() if "__shfl_down_sync" in ln]
    assert steps and all(ln.count("__shfl_down_sync") == 1 and "?" not in ln for ln in steps), steps


def test_a_one_expression_helper_is_inlined_where_it_makes_an_accumulation() -> None:
    module = text.parse("""func max_score(i32 s1, i32 s2) -> i32 {
  return s1 >= s2 ? s1 : s2;
}

func twice(i32 s) -> i32 {
  i32 t = s + s;
  return t;
}

kernel k(i32 n, in i32 a[n], inout i32 out[2]) {
  for i in 0..n {
    out[0] = max_score(out[0], a[i]);
    out[1] = twice(a[i]);
  }
}
""")
    (k,) = module.kernels
    got = ifreduce.run(k, funcs=module.funcs)
    shown = text.show(ir.Module(module.funcs, (got,)))
    assert "out[0] = out[0] >= a[i] ? out[0] : a[i];" in shown  # now an integer max accumulation
    assert "out[1] = twice(a[i]);" in shown  # not one expression, and no accumulation: left alone
    assert ifreduce.run(k) is k  # without the module's helpers nothing is inlined
    assert_same_results(module, ir.Module(module.funcs, (got,)), "k",
                        {"n": 9, "a": np.arange(9, dtype=np.int32)[::-1].copy(), "out": np.zeros(2, np.int32)},
                        ["out"])

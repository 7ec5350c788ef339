"""Tests for passes/search.py: a loop left at the first iteration where a condition holds, found by a
parallel minimum, its work before that iteration a map; every shape against the sequential loop."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from passes import REGISTRY, search
from transpile import ir, pipeline
from transpile.frontend.c import parse_source
from transpile.ir import interp

SEARCH = """\
    int k(int n, const float a[n], float x) {
      for (int i = 0; i < n; i++)
        if (a[i] == x)
          return i;
      return -1;
    }"""

THRESHOLD = """\
    void k(int n, float a[n], const float b[n], const float c[n], int stop[1]) {
      stop[0] = -1;
      for (int i = 0; i < n; i++) {
        a[i] = b[i] + c[i];
        if (a[i] == 5.0f) {
          stop[0] = i;
          break;
        }
      }
    }"""

AFTER = """\
    void k(int n, float a[n], const float b[n], float out[2]) {
      for (int i = 0; i < n; i++) {
        if (b[i] == 5.0f)
          goto found;
        a[i] = 2.0f * b[i];
      }
      out[0] = -1.0f;
      return;
    found:
      out[1] = 1.0f;
    }"""

BOTH = """\
    void k(int n, float a[n], float c[n], const float b[n], int at[1]) {
      int i;
      for (i = 0; i < n; i++) {
        c[i] = b[i] - 1.0f;
        if (b[i] == 5.0f)
          break;
        a[i] = b[i] * b[i];
      }
      at[0] = i;
    }"""


def _module(src: str) -> ir.Module:
    return parse_source(textwrap.dedent(src), "k.c")


def _args(k: ir.Kernel, n: int, hit: int | None, rng: np.random.Generator) -> dict[str, object]:
    """Arrays of small values (never 5.0) but where ``hit`` makes the stop condition hold."""
    args: dict[str, object] = {}
    for p in k.params:
        if not isinstance(p.ty, ir.ArrayType):
            args[p.name] = n if p.name == "n" else np.float32(5.0)
        else:
            size = n if isinstance(p.ty.dims[0], ir.Var) else int(p.ty.dims[0].value)  # type: ignore[union-attr]
            dt = np.float32 if p.ty.elem == ir.F32 else np.int32
            args[p.name] = rng.integers(0, 4, size).astype(dt)
    if hit is not None and 0 <= hit < n:
        if "c" in args and "stop" in args:  # THRESHOLD: b + c == 5
            args["c"][hit] = 5.0 - args["b"][hit]  # type: ignore[index]
        elif "x" in args:  # SEARCH: a == x
            args["a"][hit] = 5.0  # type: ignore[index]
        else:
            args["b"][hit] = 5.0  # type: ignore[index]
    return args


@pytest.mark.parametrize("src", [SEARCH, THRESHOLD, AFTER, BOTH], ids=["search", "threshold", "after", "both"])
def test_parallel_search_matches_the_loop(src: str) -> None:
    m = _module(src)
    lowered = pipeline.lower(m)
    k = lowered.kernels[0]
    assert any(isinstance(n, ir.For) and n.reduce == ("min",) for n in ir.walk(k)), "the search is a reduction"
    rng = np.random.default_rng(7)
    for n in (0, 1, 2, 9, 40):
        for hit in (None, 0, n // 2, n - 1, n + 3):
            args = _args(m.kernels[0], n, hit, rng)
            want = interp.run(m, "k", {a: np.copy(v) if isinstance(v, np.ndarray) else v for a, v in args.items()})
            for seed in (1, 2):
                have = interp.run(lowered, "k", {a: np.copy(v) if isinstance(v, np.ndarray) else v
                                                 for a, v in args.items()}, shuffle=seed)
                for name, w in want.items():
                    assert np.array_equal(have[name], w), (n, hit, name)


def test_registered() -> None:
    assert REGISTRY["search"] is search


@pytest.mark.parametrize("src", [
    # the condition reads what an earlier iteration wrote
    "void k(int n, float a[n]) { for (int i = 1; i < n; i++) { a[i] = a[i - 1] + 1.0f; if (a[i] > 9.0f) break; } }",
    # the work before the stop carries a value from iteration to iteration
    "void k(int n, float a[n], const float b[n], float s[1]) { float t = 0; for (int i = 0; i < n; i++) "
    "{ t += b[i]; a[i] = t; if (b[i] < 0.0f) break; } s[0] = t; }",
    # the condition reads an element the work after it writes (the entry value at i, not proven here)
    "void k(int n, float a[n]) { for (int i = 0; i < n; i++) { if (a[i] < 0.0f) break; a[i] *= 0.5f; } }",
    # the stop reads a scalar the work before it declares (it runs after the loops, where that is gone)
    "void k(int n, const float a[n], float out[1]) { for (int i = 0; i < n; i++) { float t = a[i] * 2.0f; "
    "if (a[i] > 3.0f) { out[0] = t; break; } } }",
], ids=["carried_condition", "carried_work", "after_writes_condition", "stop_reads_local"])
def test_not_a_parallel_search(src: str) -> None:
    k = _module(src).kernels[0]
    got = search.run(k)
    assert not any(isinstance(s, ir.Decl) and s.name.startswith("first") for s in got.body)


# ---------------------------------------------------------------------------
# Last matches: if (c(i)) j = i;

LAST = """\
    void k(int n, const float a[n], float out[1]) {
      int j = -7;
      for (int i = 0; i < n; i++)
        if (a[i] < 0.0f)
          j = i;
      out[0] = j + 1.0f;
    }"""

LAST_WITH_WORK = """\
    void k(int n, const float a[n], float b[n], long where[1]) {
      long j = 1000;
      for (int i = 2; i < n; i++) {
        b[i] = a[i] * 2.0f;
        if (a[i] > 0.5f)
          j = i;
      }
      where[0] = j;
    }"""


@pytest.mark.parametrize("src", [LAST, LAST_WITH_WORK], ids=["last", "with_work"])
def test_last_match_is_a_maximum(src: str) -> None:
    """The last ``i`` where the condition holds, by a max reduction; ``j`` keeps its value where none does."""
    m = _module(src)
    lowered = pipeline.lower(m)
    assert any(isinstance(n, ir.For) and n.reduce == ("max",) for n in ir.walk(lowered.kernels[0]))
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 3, 9, 40):
        for hits in ((), (0,), (n - 1,), (1, n // 2), (0, n - 1)):
            a = rng.uniform(0.0, 0.4, n).astype(np.float32)  # no match
            for h in hits:
                if 0 <= h < n:
                    a[h] = -1.0 if src is LAST else 0.9
            args = {"n": n, "a": a, "out": np.zeros(1, np.float32), "b": np.zeros(n, np.float32),
                    "where": np.zeros(1, np.int64)}
            args = {p.name: args[p.name] for p in m.kernels[0].params}
            want = interp.run(m, "k", {q: np.copy(v) if isinstance(v, np.ndarray) else v for q, v in args.items()})
            for seed in (1, 2):
                have = interp.run(lowered, "k", {q: np.copy(v) if isinstance(v, np.ndarray) else v
                                                 for q, v in args.items()}, shuffle=seed)
                for name, w in want.items():
                    assert np.array_equal(have[name], w), (n, hits, name)


@pytest.mark.parametrize("src", [
    # j read elsewhere in the loop
    "void k(int n, const float a[n], float b[n]) { int j = 0; for (int i = 0; i < n; i++) { if (a[i] < 0.0f) j = i; "
    "b[i] = j; } }",
    # the condition reads what the loop writes
    "void k(int n, float a[n], int o[1]) { int j = 0; for (int i = 1; i < n; i++) { a[i] = a[i - 1] * 0.5f; "
    "if (a[i] < 0.1f) j = i; } o[0] = j; }",
    # a downward loop: the last match is the smallest i
    "void k(int n, const float a[n], int o[1]) { int j = 0; for (int i = n - 1; i >= 0; i -= 2) "
    "if (a[i] < 0.0f) j = i; o[0] = j; }",
    # something other than the counter
    "void k(int n, const float a[n], int o[1]) { int j = 0; for (int i = 0; i < n; i++) if (a[i] < 0.0f) j = i + 1; "
    "o[0] = j; }",
], ids=["read_elsewhere", "condition_reads_written", "downward", "not_the_counter"])
def test_not_a_last_match(src: str) -> None:
    k = _module(src).kernels[0]
    got = search.run(k)
    assert not any(isinstance(s, ir.Decl) and s.name.startswith("last") for s in got.body)

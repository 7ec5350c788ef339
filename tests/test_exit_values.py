"""A C loop variable keeps its exit value after the loop (transpile/frontend/loops.py, ``exit_values``).

The IR scopes a loop's counter to the loop, so the front end assigns C's exit value to the declared
variable after a loop wherever it is read before being written again.  Checked here against a model of
C's loop on every small range, for each condition, step and counter type the front end normalises, and
on the shapes ordinary code reads it in (a remainder loop after an unrolled one, a count, a nest).
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from transpile import ir
from transpile.diagnostics import TranspileError
from transpile.frontend.c import parse_source
from transpile.ir import interp

_BITS = {"int": (32, True), "long": (64, True), "unsigned": (32, False), "short": (16, True)}


def _c_exit(lo: int, hi: int, op: str, step: int, ctype: str) -> tuple[int, int] | None:
    """(trips, exit value) of ``for (i = lo; i OP hi; i += step)`` run by C's rules (``ctype`` wraps);
    None where the counter wraps around (an unsigned ``i -= 2`` stepping past 0 runs ~2^31 trips in C)."""
    bits, signed = _BITS[ctype]
    mask = (1 << bits) - 1

    def wrap(v: int) -> int:
        v &= mask
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    # C compares in the promoted type: short is compared as int, the others as themselves
    i, h, trips = wrap(lo), wrap(hi), 0
    test = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b, "!=": lambda a, b: a != b}[op]
    while test(i, h):
        trips += 1
        if not signed and not 0 <= i + step <= mask:
            return None
        i = wrap(i + step)
    return trips, i


_CASES = [(op, step) for op in ("<", "<=") for step in (1, 2, 3, 4, 7)] + \
         [(op, step) for op in (">", ">=") for step in (-1, -2, -3, -5)] + [("!=", 1), ("!=", -1)]


@pytest.mark.parametrize("ctype", ["int", "long", "unsigned", "short"])
@pytest.mark.parametrize("op,step", _CASES)
def test_exit_value_matches_c(op: str, step: int, ctype: str) -> None:
    bits, signed = _BITS[ctype]
    if not signed and op == ">=":
        pytest.skip("'i >= b' counting down an unsigned i past 0 never ends for b == 0")
    inc = f"i += {step}" if step > 0 else f"i -= {-step}"
    src = textwrap.dedent(f"""\
        void k({ctype} lo, {ctype} hi, long out[2]) {{
          {ctype} i;
          long trips = 0;
          for (i = lo; i {op} hi; {inc})
            trips += 1;
          out[0] = trips;
          out[1] = (long)i;
        }}""")
    m = parse_source(src, "k.c")
    lowered = [n for n in ir.walk(m.kernels[0]) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)
               and n.target.name == "i"]
    assert lowered, "the exit value is assigned (out[1] reads i)"
    values = range(0, 23) if not signed else range(-11, 12)
    for lo in values:
        for hi in values:
            if op == "!=" and (hi - lo) * step < 0:
                continue  # C's loop runs until i wraps around: not a loop anyone writes
            model = _c_exit(lo, hi, op, step, ctype)
            if model is None:
                continue  # the unsigned counter wraps: not a loop anyone writes either
            trips, want = model
            got = interp.run(m, "k", {"lo": lo, "hi": hi, "out": np.zeros(2, np.int64)})["out"]
            assert (int(got[0]), int(got[1])) == (trips, want), (lo, hi, src)


def _kernel(src: str) -> ir.Kernel:
    return parse_source(textwrap.dedent(src), "k.c").kernels[0]


def test_dead_counter_gets_no_assignment() -> None:
    """PolyBench's ``int i; for (i = 0; ...)`` reads ``i`` in no other place: the IR is as before."""
    k = _kernel("""\
        void k(int n, double a[n]) {
          int i;
          for (i = 0; i < n; i++) a[i] = 0.0;
          for (i = 1; i < n; i++) a[i] += a[i - 1];
        }""")
    assert not any(isinstance(s, ir.Decl) for s in k.body)
    assert not any(isinstance(n, ir.Assign) and isinstance(n.target, ir.Var) for n in ir.walk(k))


def test_overwritten_counter_gets_no_assignment() -> None:
    """The counter is written again before any read: the exit value is dead there."""
    k = _kernel("""\
        void k(int n, double a[n], int out[1]) {
          int i;
          for (i = 0; i < n; i++) a[i] = 0.0;
          i = 7;
          out[0] = i;
        }""")
    writes = [n for n in ir.walk(k) if isinstance(n, ir.Assign) and isinstance(n.target, ir.Var)]
    assert [w.value for w in writes] == [ir.Const(7, ir.I32)]


def test_remainder_loop_continues_from_the_exit_value() -> None:
    src = """\
        void k(int n, float a[n], float b[n]) {
          int i;
          for (i = 0; i + 4 <= n; i += 4) {
            a[i] = b[i]; a[i + 1] = b[i + 1]; a[i + 2] = b[i + 2]; a[i + 3] = b[i + 3];
          }
          for (; i < n; i++)
            a[i] = -b[i];
        }"""
    m = parse_source(textwrap.dedent(src), "k.c")
    for n in range(0, 12):
        b = np.arange(1, n + 1, dtype=np.float32)
        got = interp.run(m, "k", {"n": n, "a": np.zeros(n, np.float32), "b": b})["a"]
        want = b.copy()
        want[n - n % 4:] *= -1
        assert np.array_equal(got, want), n


def test_exit_value_in_a_nest_is_private_to_the_outer_iteration() -> None:
    src = """\
        void k(int n, int m, float a[n][m], int last[n]) {
          for (int j = 0; j < n; j++) {
            int i;
            for (i = 0; i < m; i += 3)
              a[j][i] = 1.0f;
            last[j] = i;
          }
        }"""
    m = parse_source(textwrap.dedent(src), "k.c")
    got = interp.run(m, "k", {"n": 2, "m": 7, "a": np.zeros((2, 7), np.float32), "last": np.zeros(2, np.int32)})
    assert list(got["last"]) == [9, 9]


def test_runtime_step_exit_value_is_refused_where_read() -> None:
    with pytest.raises(TranspileError, match="'i' is read after this loop, which counts it with a step "
                                             "known only at run time"):
        _kernel("""\
            void k(int n, int inc, double a[n], int out[1]) {
              int i;
              for (i = 0; i < n; i += inc) a[i] = 0.0;
              out[0] = i;
            }""")
    _kernel("""\
        void k(int n, int inc, double a[n]) {
          int i;
          for (i = 0; i < n; i += inc) a[i] = 0.0;
        }""")  # not read after: accepted


def test_loop_without_initialisation_needs_a_counter() -> None:
    with pytest.raises(TranspileError, match="without an initialisation"):
        _kernel("void k(int n, double a[n]) { int i = 0; for (; i < n;) a[i] = 0.0; }")

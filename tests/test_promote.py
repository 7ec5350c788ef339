"""Tests for passes/promote.py: array elements re-read by a sequential device loop held in registers.

Each rewrite is checked three ways: the printed form, the interpreter (the promoted launch against
the original one, shuffled), and the emitted CUDA in the simulator against the interpreter.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

from passes import promote
from tests.test_parallel_semantics import same
from transpile import cuda, ir
from transpile.cuda.printer import Namer
from transpile.ir import interp, text

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the simulator needs g++")

HEAD = ("kernel k(i32 n, i32 w, inout i32 T[n][n], inout f64 p[n][n], inout f64 q[n][n], in f64 u[n][n], "
        "inout f64 v[n][n]) {\n  launch {\n    for i in 0..n par(x) {\n")
TAIL = "    }\n  }\n}\n"

# nussinov's accumulator, adi's forward recurrences (two arrays, one read twice) and a downward one.
BOTH = HEAD + """
      if (w + i < n) {
        for k in i + 1..w + i {
          T[i][w + i] = T[i][w + i] > T[i][k] + T[k + 1][w + i] ? T[i][w + i] : T[i][k] + T[k + 1][w + i];
        }
      }
      for j in 1..n - 1 {
        p[i][j] = -1.0 / (2.0 * p[i][j - 1] + 3.0);
        q[i][j] = (u[j][i] - q[i][j - 1]) / (2.0 * p[i][j - 1] + 3.0);
      }
      for j in 1..n - 1 step -1 {
        v[i][j] = p[i][j] * v[i][j + 1] + q[i][j];
      }
""" + TAIL


def _kernel(src: str) -> ir.Kernel:
    return text.parse(src, "k.ir").kernels[0]


def _promoted(k: ir.Kernel) -> ir.Kernel:
    launch = k.body[0]
    assert isinstance(launch, ir.Launch)
    return dataclasses.replace(k, body=(promote.run_launch(launch, Namer(ir.identifiers(k)).fresh),))


def _show(k: ir.Kernel) -> str:
    return text.show(ir.Module((), (k,)))


def _args(rng: np.random.Generator, n: int, w: int) -> dict[str, object]:
    return {"n": n, "w": w, "T": rng.integers(-50, 50, (n, n), dtype=np.int32),
            **{a: rng.random((n, n)) + 0.5 for a in ("p", "q", "u", "v")}}


def test_accumulator_and_recurrences_are_promoted() -> None:
    shown = _show(_promoted(_kernel(BOTH)))
    for line in ("if (i + 1 < w + i) {",
                 "i32 T_acc = T[i][w + i];",
                 "T_acc = T_acc > T[i][k] + T[k + 1][w + i] ? T_acc : T[i][k] + T[k + 1][w + i];",
                 "T[i][w + i] = T_acc;",
                 "f64 p_prev = p[i][1 - 1];",
                 "f64 p_next = -1.0 / (2.0 * p_prev + 3.0);",
                 "p[i][j] = p_next;",
                 "f64 q_next = (u[j][i] - q_prev) / (2.0 * p_prev + 3.0);",
                 "p_prev = p_next;",
                 "f64 v_prev = v[i][n - 1 - 1 + 1];",
                 "f64 v_next = p[i][j] * v_prev + q[i][j];"):
        assert line in shown, line


@pytest.mark.parametrize(("why", "body"), [
    ("the write is conditional", "for j in 1..n { if (j > w) { p[i][j] = p[i][j - 1] + 1.0; } }"),
    ("another element is read", "for j in 1..n - 1 { p[i][j] = p[i][j - 1] + p[i][j + 1]; }"),
    ("the previous value is read only under a branch",
     "for j in 1..n { p[i][j] = j > 1 ? p[i][j - 1] : 0.5; }"),
    ("the subscript reads a scalar the loop changes",
     "i32 m = 0; for j in 0..n { m = j / 2; p[i][m] = p[i][m] + 1.0; }"),
    ("a read may meet the accumulated element", "for k in i..n { T[i][w] = T[i][w] + T[i][k]; }"),
    ("a second element is written", "for k in 0..w { T[i][0] = T[i][0] + 1; T[i][1] = T[i][0]; }"),
])
def test_refusals(why: str, body: str) -> None:
    k = _kernel(HEAD + "      " + body + "\n" + TAIL)
    assert _promoted(k) == k, why


def test_accumulator_disjoint_by_the_loop_bounds_only() -> None:
    # T[i][k] for k in 0..w never meets T[i][w] (k < w), though the subscripts alone could.
    k = _kernel(HEAD + "      for k in 0..w { T[i][w] = T[i][w] + T[i][k]; }\n" + TAIL)
    assert "T_acc += T[i][k];" in _show(_promoted(k))


@pytest.mark.parametrize("n, w", [(0, 0), (1, 0), (2, 1), (5, 2), (9, 4), (17, 3)])
def test_interpreter_agrees(n: int, w: int) -> None:
    srcs = [BOTH, HEAD + "      for k in 0..w { T[i][w] = T[i][w] + T[i][k]; }\n" + TAIL]
    for src in srcs:
        k = _kernel(src)
        out = _promoted(k)
        assert out != k
        rng = np.random.default_rng(n * 31 + w)
        args = _args(rng, n, min(w, max(n - 1, 0)))
        want = interp.run(ir.Module((), (k,)), "k", {a: (x.copy() if isinstance(x, np.ndarray) else x)
                                                      for a, x in args.items()})
        for shuffle in range(3):
            got = interp.run(ir.Module((), (out,)), "k", {a: (x.copy() if isinstance(x, np.ndarray) else x)
                                                           for a, x in args.items()}, shuffle=shuffle)
            assert same(got, want), (src, shuffle)


@needs_gxx
def test_emitted_cuda_matches_the_interpreter(tmp_path: Path) -> None:
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    module = text.parse(BOTH, "k.ir")
    code = cuda.emit(module, source="k.ir")
    assert "T_acc" in code and "p_prev" in code and "v_next" in code  # the emitter promotes plain launches
    cu = tmp_path / "k.cu"
    cu.write_text(code)
    lib = SimLibrary(build(cu, tmp_path / "sim"))
    for n, w in ((0, 0), (1, 0), (3, 1), (7, 3), (40, 11)):
        args = _args(np.random.default_rng(n), n, w)
        want = interp.run(module, "k", {a: (x.copy() if isinstance(x, np.ndarray) else x) for a, x in args.items()})
        got = {a: (x.copy() if isinstance(x, np.ndarray) else x) for a, x in args.items()}
        run = lib.run("k", *(got[a] for a in ("n", "w", "T", "p", "q", "u", "v")), seed=1, restype=None)
        assert run.ok, run.diagnostics
        for a in ("T", "p", "q", "v"):
            np.testing.assert_array_equal(got[a], want[a], err_msg=a)


def test_naive_mapping_is_not_promoted() -> None:
    from passes import tile

    module = text.parse(BOTH, "k.ir")
    assert "p_prev" in cuda.emit(module, source="k.ir", tiling=tile.Options())
    assert "p_prev" not in cuda.emit(module, source="k.ir", tiling=tile.Options(enabled=False))


def test_an_element_whose_subscript_names_the_loop_with_coefficient_zero_is_loaded_outside_it() -> None:
    # Found by tests/fuzz_cuda.py --ir: after wavefront skewing, a subscript such as
    # -2 * i + -2 * (w1 - i) is invariant in the sequential loop i although its text names i. The
    # load before the loop and the store after it printed that text where i is not declared (nvcc:
    # identifier "i" is undefined; exit 1 on a valid kernel). The hoisted access now has the loop's
    # variables pinned to 0 (the same element, by the affine forms).
    src = HEAD + "      for k in 0..w { T[i][w + k - k] = T[i][w + k - k] + T[i][k]; }\n" + TAIL
    out = _promoted(_kernel(src))
    shown = _show(out)
    assert "T_acc" in shown
    launch = out.body[0]
    assert isinstance(launch, ir.Launch)
    par = launch.body[0]
    assert isinstance(par, ir.For)
    guarded = par.body[0]
    assert isinstance(guarded, ir.If)
    hoisted = [s for s in guarded.then if not isinstance(s, ir.For)]
    names = {n.name for s in hoisted for n in ir.walk(s) if isinstance(n, ir.Var)}
    assert hoisted and "k" not in names, shown
    for n, w in ((1, 0), (5, 2), (9, 4)):
        args = _args(np.random.default_rng(n), n, w)
        want = interp.run(ir.Module((), (_kernel(src),)), "k", {a: (x.copy() if isinstance(x, np.ndarray) else x)
                                                                  for a, x in args.items()})
        got = interp.run(ir.Module((), (out,)), "k", {a: (x.copy() if isinstance(x, np.ndarray) else x)
                                                      for a, x in args.items()})
        assert same(got, want)
    assert "__global__" in cuda.emit(ir.Module((), (out,)), source="k.ir")

"""Single-thread launches joined with the one-block reduction next to them (passes/map_gpu._join_serial):
thread 0 runs them before and after the reduction, in one launch instead of three."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests import polybench
from transpile import cuda, ir, pipeline
from transpile.frontend import c as cfront
from transpile.ir import interp, text

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the simulator needs g++")


def _launch_bodies(k: ir.Kernel) -> list[list[str]]:
    """Each launch (host loops included) as the kinds of its top-level statements."""
    out: list[list[str]] = []
    for n in ir.walk(k):
        if isinstance(n, ir.Launch):
            out.append(["reduce" if isinstance(s, ir.For) and s.reduce else type(s).__name__ for s in n.body])
    return out


@pytest.mark.parametrize(("name", "joined"), [
    ("gramschmidt", ["Assign", "reduce", "Assign"]),  # nrm = 0; nrm += ..; R[k][k] = sqrt(nrm)
    ("ludcmp", ["Assign", "reduce", "Assign"]),       # w = b[i]; w -= ..; y[i] = w (both substitutions)
    ("durbin", ["Assign", "Assign", "reduce", "Assign"]),  # beta = ..; sum = 0; sum += ..; alpha = ..
])
def test_polybench_reductions_take_their_single_thread_statements(name: str, joined: list[str]) -> None:
    spec = polybench.spec(name)
    (k,) = pipeline.lower(cfront.parse_file(str(spec.path), function=spec.function)).kernels
    assert joined in _launch_bodies(k)
    assert not any(b == ["reduce"] for b in _launch_bodies(k))


SRC = """kernel k(i32 n, inout f64 x[n], inout f64 s[2]) {
  f64 c;
  f64 t;
  for it in 0..3 {
    x[n - 1] = x[n - 1] * 0.5 + s[1];
    t = s[0];
    for j in 0..n reduce(+) {
      t += x[j] * x[j];
    }
    s[0] = t * 0.25;
    s[1] = t - s[1];
  }
}"""

READS_PROLOGUE = """kernel k(i32 n, inout f64 x[n], inout f64 s[2]) {
  f64 c;
  f64 t;
  for it in 0..3 {
    c = x[0] * 2.0;
    t = 0.0;
    for j in 0..n reduce(+) {
      t += x[j] * c;
    }
    s[0] = t;
  }
}"""


def _lower(src: str) -> ir.Module:
    return pipeline.lower(text.parse(src, "k.ir"))


def test_joined_with_array_writes_before_and_scalars_after() -> None:
    (k,) = _lower(SRC).kernels
    assert _launch_bodies(k) == [["Assign", "Assign", "reduce", "Assign", "Assign"]]


def test_a_scalar_the_terms_read_keeps_its_launch_apart() -> None:
    # c is written by the statements before and read by every term: other threads would not see it.
    (k,) = _lower(READS_PROLOGUE).kernels
    assert _launch_bodies(k) == [["Assign", "Assign"], ["reduce", "Assign"]]


@needs_gxx
def test_joined_launch_matches_the_interpreter(tmp_path: Path) -> None:
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    module = text.parse(SRC, "k.ir")
    code = cuda.emit(pipeline.lower(module), source="k.ir")
    assert "if (tid == 0) {" in code
    cu = tmp_path / "k.cu"
    cu.write_text(code)
    lib = SimLibrary(build(cu, tmp_path / "sim"))
    for n in (1, 2, 255, 256, 257, 700):  # several chunks of 256 terms: thread 0 writes x[n - 1], the last chunk reads it
        rng = np.random.default_rng(n)
        args = {"n": n, "x": rng.random(n), "s": rng.random(2)}
        want = interp.run(module, "k", {a: (v.copy() if isinstance(v, np.ndarray) else v) for a, v in args.items()})
        first = None
        for seed in (1, 2):
            got = {a: (v.copy() if isinstance(v, np.ndarray) else v) for a, v in args.items()}
            run = lib.run("k", got["n"], got["x"], got["s"], seed=seed, restype=None)
            assert run.ok, run.diagnostics
            # The block's fold is a fixed tree: the interpreter's sequential sums up to rounding, and the
            # same bits under every schedule.
            np.testing.assert_allclose(got["x"], want["x"], rtol=1e-13, atol=0)
            np.testing.assert_allclose(got["s"], want["s"], rtol=1e-13, atol=0)
            if first is None:
                first = got
            else:
                np.testing.assert_array_equal(got["x"], first["x"])
                np.testing.assert_array_equal(got["s"], first["s"])

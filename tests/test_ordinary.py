"""The ordinary-C corpus (tests/ordinary/): classical dependence-test loops, each with its expected outcome.

Every file holds one function named as the file, written from the categories of the classical
literature (Allen & Kennedy; Wolfe; Padua & Wolfe): maps, recurrences, reductions written with ``if``,
strides, induction variables, subscripts through copies, wrap-around scalars, ``goto`` and ``switch``,
pointers into arrays, helpers taking arrays, ``break``.  Its ``// expect:`` line says what the compiler
must make of it (tests/ordinary_outcome.py).

* ``test_outcome``: the expectation holds.  ``GAPS`` lists the files whose expectation is not met yet
  (the parallelism is there but the compiler does not find it): strict xfails, so a fix must remove
  the entry.
* ``test_results``: nothing is miscompiled, quickly: the lowered IR run by the interpreter with its
  parallel loops shuffled (random order, random association of reductions) leaves every array as gcc's
  build of the C function does, at two small sizes.  That covers the front end's rewrites (goto, switch,
  pointers, breaks) and the passes; the CUDA emitter and the simulator are covered by
* ``test_cli_verified`` (slow): the CLI with its default verification (nvcc and the CUDA simulator), on
  five files in CI (a goto, a pointer walk, an if-reduction, an argmax, a run-time step: about 8 s
  each); on every file with ``TRANSPILE_ORDINARY_ALL=1`` in the environment (about 25 minutes of CPU).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.ordinary_outcome import CORPUS, expectation, meets, outcome

FILES = sorted(CORPUS.glob("*.c"))
IDS = [p.stem for p in FILES]

# Expectations not met yet, with the missing piece (docs/ordinary_c.md).
GAPS: dict[str, str] = {
}


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.xfail(reason=GAPS[p.stem], strict=True))
                                  if p.stem in GAPS else p for p in FILES], ids=IDS)
def test_outcome(path: Path) -> None:
    expect = expectation(path)
    got = outcome(path)
    assert meets(expect, got), (f"{path.name}: expected {expect}; got "
                                f"{got.error or f'parallel {sorted(got.par)}, reduction {got.reduction}'}")
    if got.error is not None:
        assert f"{path.name}:" in got.error and ": error: " in got.error, got.error  # located


def test_corpus_size() -> None:
    assert len(FILES) >= 150
    assert all(p.read_text().startswith(f"// {p.stem}: ") for p in FILES)


def _scalars(names: list[str], n: int) -> dict[str, int]:
    """Integer arguments: the size ``n``, run-time steps small and positive, offsets inside the arrays."""
    small = {"inc": 3, "incx": 2, "m": n // 3, "lo": 1, "hi": n - 1, "t": 2, "flag": 1, "mode": 2}
    return {k: n if k == "n" else small.get(k, 1) for k in names}


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_results(path: Path) -> None:
    from transpile.ir import interp
    from transpile.verify.reference import GccReference
    from transpile.verify.signature import kernel_sig
    from transpile.verify.synth import Shape, copy_inputs, make_inputs, seed_for

    got = outcome(path)
    if got.error is not None:
        pytest.skip("refused")
    assert got.module is not None and got.lowered is not None
    kernel = got.module.kernels[0]
    sig = kernel_sig(kernel)
    ref = GccReference(sig, path, function=kernel.name)
    ints = [a.name for a in sig.args if a.role in ("size", "int")]
    for n in (11, 6):
        x = make_inputs(sig, Shape(f"n={n}", _scalars(ints, n)), seed_for(40, n), "signed", "random")
        assert x is not None
        want = ref.run(x)
        for shuffle in (None, n):
            have = interp.run(got.lowered, kernel.name, copy_inputs(x), shuffle=shuffle)
            for a in sig.arrays:
                np.testing.assert_allclose(have[a.name], want[a.name], rtol=2e-5, atol=1e-5,
                                           err_msg=f"{path.name}: {a.name} at n={n}, shuffle {shuffle}")


CLI_SAMPLE = ("goto_if_else", "ptr_post_increment", "red_max_if", "red_argmax", "step_runtime_blas")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("path", [p for p in (FILES if os.environ.get("TRANSPILE_ORDINARY_ALL") == "1"
                                            else [p for p in FILES if p.stem in CLI_SAMPLE])],
                         ids=lambda p: p.stem)
def test_cli_verified(path: Path, tmp_path: Path) -> None:
    expect = expectation(path)
    proc = subprocess.run([sys.executable, "-m", "transpile.cli", "compile", str(path), "--function", path.stem,
                           "-o", str(tmp_path / "k.cu")], capture_output=True, text=True, timeout=600)
    if expect.startswith("error:"):
        assert proc.returncode == 1 and expect[6:].strip() in proc.stderr, proc.stderr
        return
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not fully verified" not in proc.stderr, proc.stderr[-3000:]


RUNTIME_STEPS = [p for p in FILES if p.stem.startswith("step_runtime_") and not expectation(p).startswith("error:")]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("path", RUNTIME_STEPS, ids=lambda p: p.stem)
@pytest.mark.parametrize("step", [1, 2, 5, 13])
def test_runtime_steps(path: Path, step: int) -> None:
    """A run-time step (``i += inc``) at several values, against gcc, the parallel loops shuffled."""
    from transpile.ir import interp
    from transpile.verify.reference import GccReference
    from transpile.verify.signature import kernel_sig
    from transpile.verify.synth import Shape, copy_inputs, make_inputs, seed_for

    got = outcome(path)
    assert got.module is not None and got.lowered is not None
    kernel = got.module.kernels[0]
    sig = kernel_sig(kernel)
    ref = GccReference(sig, path, function=kernel.name)
    ints = [a.name for a in sig.args if a.role in ("size", "int")]
    for n in (1, 7, 16):
        x = make_inputs(sig, Shape(f"n={n}", {k: n if k == "n" else step for k in ints}), seed_for(41, n),
                        "signed", "random")
        assert x is not None
        want = ref.run(x)
        for shuffle in (None, n):
            have = interp.run(got.lowered, kernel.name, copy_inputs(x), shuffle=shuffle)
            for a in sig.arrays:
                np.testing.assert_array_equal(have[a.name], want[a.name], err_msg=f"{a.name} at n={n}, step {step}")

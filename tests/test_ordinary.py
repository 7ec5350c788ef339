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
* ``test_cli_verified``: every file through the CLI with its default verification (nvcc and the CUDA
  simulator against gcc): a refusal exits 1 with its expected message, any other file exits 0 verified
  and writes its output.  The calls go through a fork server (tests/cli_server.py): each is
  ``transpile.cli.main`` with the arguments ``transpile compile FILE --function NAME -o OUT`` gets, in
  a child forked from a process that has only imported the compiler, its exit status and stderr
  checked as a subprocess's would be; about 3.7 s a file instead of 4.8 s as one process each.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.cli_server import Client
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
    small = {"inc": 3, "incx": 2, "dec": -3, "m": n // 3, "lo": 1, "hi": n - 1, "t": 2, "flag": 1, "mode": 2}
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


@pytest.fixture(scope="module")
def cli() -> Iterator[Client]:
    client = Client()
    yield client
    client.close()


REFUSED = [p for p in FILES if expectation(p).startswith("error:")]
COMPILED = [p for p in FILES if p not in REFUSED]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("path", REFUSED, ids=lambda p: p.stem)
def test_cli_refused(path: Path, tmp_path: Path, cli: Client) -> None:
    out = tmp_path / "k.cu"
    proc = cli.run(["compile", str(path), "--function", path.stem, "-o", str(out)])
    assert proc.returncode == 1 and expectation(path)[6:].strip() in proc.stderr, proc.stderr
    assert not out.exists()


@pytest.mark.sample(3)  # a compile and a simulation each (~8 s): CI runs every third, TRANSPILE_TESTS=all all
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("path", COMPILED, ids=lambda p: p.stem)
def test_cli_verified(path: Path, tmp_path: Path, cli: Client) -> None:
    out = tmp_path / "k.cu"
    proc = cli.run(["compile", str(path), "--function", path.stem, "-o", str(out)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "not fully verified" not in proc.stderr, proc.stderr[-3000:]
    assert f"'{path.stem}' verified" in proc.stderr and out.is_file(), proc.stderr[-3000:]


RUNTIME_STEPS = [p for p in FILES if p.stem.startswith("step_runtime_") and not expectation(p).startswith("error:")]


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("path", RUNTIME_STEPS, ids=lambda p: p.stem)
@pytest.mark.parametrize("step", [1, 2, 5, 13])
def test_runtime_steps(path: Path, step: int) -> None:
    """A run-time step (``i += inc``; ``dec``: one that must be negative) at several values, against gcc,
    the parallel loops shuffled."""
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
        x = make_inputs(sig, Shape(f"n={n}", _steps(ints, n, step)), seed_for(41, n), "signed", "random")
        assert x is not None
        want = ref.run(x)
        for shuffle in (None, n):
            have = interp.run(got.lowered, kernel.name, copy_inputs(x), shuffle=shuffle)
            for a in sig.arrays:
                np.testing.assert_array_equal(have[a.name], want[a.name], err_msg=f"{a.name} at n={n}, step {step}")


def _steps(ints: list[str], n: int, step: int) -> dict[str, int]:
    """The size ``n`` and every other integer the run-time step ``step`` (``-step`` for a ``dec``)."""
    return {k: n if k == "n" else -step if k == "dec" else step for k in ints}


#: Run-time steps whose check cannot come before the loops (a triangular nest): warned, not checked.
UNCHECKED_STEPS = ("step_runtime_triangle",)


@pytest.mark.parametrize("path", [p for p in RUNTIME_STEPS if p.stem not in UNCHECKED_STEPS], ids=lambda p: p.stem)
@pytest.mark.parametrize("step", [0, -2])
def test_runtime_step_errors(path: Path, step: int) -> None:
    """A run-time step of 0 or of the wrong sign (``-2``; ``+2`` for a ``dec``) where the loop runs is C's
    endless or overflowing loop: the interpreter stops at the loop with the trap's error.  Where the loop's
    range is empty (``n == 0`` at step 0), C runs nothing and neither does the IR."""
    from transpile.ir import interp
    from transpile.verify.signature import kernel_sig
    from transpile.verify.synth import Shape, make_inputs, seed_for

    got = outcome(path)
    assert got.lowered is not None and got.module is not None
    kernel = got.module.kernels[0]
    sig = kernel_sig(kernel)
    ints = [a.name for a in sig.args if a.role in ("size", "int")]
    for n in (0, 7) if step == 0 else (7,):
        x = make_inputs(sig, Shape(f"n={n}", _steps(ints, n, step)), seed_for(42, n), "signed", "random")
        assert x is not None
        for module in (got.module, got.lowered):
            if n == 0:
                interp.run(module, kernel.name, dict(x))
                continue
            with pytest.raises(interp.InterpError) as e:
                interp.run(module, kernel.name, dict(x))
            assert f"{path.name}:" in str(e.value) and f"'{kernel.name}' stopped: the step '" in str(e.value)


@pytest.mark.parametrize("name", UNCHECKED_STEPS)
def test_an_unchecked_runtime_step_is_warned_and_runs_no_iteration(name: str) -> None:
    """Where the step's check cannot run before the loops, the compile warns (``-Wunchecked-step``) and a
    step of 0 runs no iteration of that loop (its guard), as before the check existed."""
    import warnings

    from transpile import frontend, pipeline
    from transpile.diagnostics import TranspileWarning
    from transpile.ir import interp

    path = CORPUS / f"{name}.c"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = frontend.load(path, function=name)
    assert any(isinstance(w.message, TranspileWarning) and w.message.wid == "unchecked-step" for w in caught)
    lowered = pipeline.lower(module)
    n = 6
    a = np.arange(n * n, dtype=np.float32).reshape(n, n)
    for m in (module, lowered):
        got = interp.run(m, name, {"n": n, "inc": 0, "A": a.copy()})
        np.testing.assert_array_equal(got["A"], a)


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the CUDA simulator")
def test_runtime_step_zero_drop_in(tmp_path: Path) -> None:
    """The drop-in at step 0 in the CUDA simulator, on its GPU path and its host path: the message on
    stderr, as transpile_check reports a failed CUDA call, then abort(); at an empty range it returns."""
    import signal

    from tests.interp_check import sim_library
    from transpile import cuda
    from transpile.sim.runner import SimCrash, run_isolated

    path = CORPUS / "step_runtime_blas.c"
    got = outcome(path)
    assert got.module is not None and got.lowered is not None
    lib = sim_library(cuda.emit(got.lowered, source=path.name, host=got.module), tmp_path / "sim")
    saved = os.environ.get("TRANSPILE_DROPIN_HOST")
    try:
        for host in ("0", "1"):
            os.environ["TRANSPILE_DROPIN_HOST"] = host
            x = np.arange(7, dtype=np.float32)
            with pytest.raises(SimCrash) as e:
                run_isolated(lib.path, "step_runtime_blas", 7, 0, np.float32(2.0), x, restype=None)
            assert e.value.exitcode == -signal.SIGABRT, host
            assert (f"transpile: step_runtime_blas: {path}:5:3: the step 'incx' of the loop over 'i' is zero or "
                    "negative at run time") in e.value.stderr, e.value.stderr
            run = run_isolated(lib.path, "step_runtime_blas", 0, 0, np.float32(2.0), x[:0], restype=None)
            assert run.ok, run.diagnostics
    finally:
        if saved is None:
            os.environ.pop("TRANSPILE_DROPIN_HOST", None)
        else:
            os.environ["TRANSPILE_DROPIN_HOST"] = saved


@pytest.mark.parametrize("name, want", [("step_runtime_neg_down", -2), ("step_runtime_neg_up", -2),
                                        ("step_runtime_blas", 2)])
def test_the_verifier_draws_a_run_time_step_of_the_sign_c_needs(name: str, want: int) -> None:
    """The verifier's shapes give a non-size integer the sign that passes the front end's step check, so a
    loop stepping down by a run-time ``dec`` is compared at ``dec = -2`` (at 2, C's loop never ends)."""
    from transpile.verify.signature import kernel_sig
    from transpile.verify.synth import other_ints

    got = outcome(CORPUS / f"{name}.c")
    assert got.module is not None
    kernel = got.module.kernels[0]
    (step,) = other_ints(kernel_sig(kernel), kernel).values()
    assert step == want

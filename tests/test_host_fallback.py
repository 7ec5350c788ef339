"""The drop-in's host path (transpile/cuda/dropin.py, issue 39 item 2): the C function as written,
compiled into the .cu for the host, taken where the model says one CPU core beats the GPU.

In the simulator: the host path gives the reference's results (gcc, on fresh random inputs) and
makes no launch; ``TRANSPILE_DROPIN_HOST`` forces either path; ``NAME_on_host`` reports the model's
choice (``TRANSPILE_DROPIN_HOST=model``: the simulator otherwise takes the GPU path), which is the
host for tiny sizes and the GPU for large ones; and the verifier's stage (c) runs the host path too
(a wrong host path fails it while the GPU path is right)."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests import polybench
from tests.interp_check import sim_library
from transpile import cuda, frontend, pipeline
from transpile.cuda import dropin as dropin_host

ENV = dropin_host.ENV

#: Named in issue 39 (slower than one CPU core at LARGE): a stencil of many small steps, and a
#: sequential solver (a host loop of short launches, a local array on the heap).
KERNELS = ("jacobi-1d", "durbin")


def _code(name: str, host: bool = True) -> str:
    module = frontend.load(polybench.spec(name).path)
    return cuda.emit(pipeline.lower(module), source=f"{name}.c", host=module if host else None)


@pytest.fixture(scope="module", params=KERNELS)
def built(request: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Any]:
    name = request.param
    return name, sim_library(_code(name), tmp_path_factory.mktemp(name.replace("-", "_")))


@pytest.fixture
def env() -> Iterator[dict[str, str]]:
    """Sets variables for one test (restored after it)."""
    saved = os.environ.get(ENV)
    values: dict[str, str] = {}
    yield values
    if saved is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = saved


def _set(value: str | None) -> None:
    if value is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = value


def _fresh(args: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}


@pytest.mark.parametrize("seed", [0, 1])
def test_both_paths_give_the_reference_results(built: tuple[str, Any], env: dict[str, str], seed: int) -> None:
    name, lib = built
    spec = polybench.spec(name)
    args = polybench.make_args(name, np.random.default_rng(seed))
    want = polybench.run_c(name, _fresh(args))
    for value, on_host in (("1", True), ("0", False)):  # unset: the model (the verifier sets 0 or 1 per run)
        _set(value)
        got = _fresh(args)
        run = lib.run(spec.function, *got.values(), restype=None)
        assert run.ok, run.diagnostics
        assert (run.launches == 0) == on_host, (value, run.launches)
        for k, v in want.items():
            np.testing.assert_allclose(got[k], v, rtol=1e-12, atol=1e-14, err_msg=f"{k}, {ENV}={value}")


def _on_host(lib: Any, name: str, sizes: dict[str, int]) -> int:
    """``NAME_on_host`` for these sizes (arrays NULL: the choice reads the sizes only)."""
    spec = polybench.spec(name)
    fn = lib.lib[f"{spec.function}_on_host"]
    fn.restype = ctypes.c_int
    args = [ctypes.c_int(sizes[p.name]) if p.kind == "size" else ctypes.c_void_p(None) for p in spec.params]
    return int(fn(*args))


#: Per kernel: sizes where one core wins (tiny), and sizes where the GPU does.
SIZES = {
    "jacobi-1d": ({"tsteps": 2, "n": 30}, {"tsteps": 10, "n": 200_000_000}),
    "durbin": ({"n": 40}, {"n": 2_000_000}),
}


def test_the_model_takes_the_host_for_tiny_sizes_and_the_gpu_for_large_ones(
        built: tuple[str, Any], env: dict[str, str]) -> None:
    name, lib = built
    tiny, large = SIZES[name]
    _set("model")
    assert _on_host(lib, name, tiny) == 1
    assert _on_host(lib, name, large) == 0
    _set("1")
    assert _on_host(lib, name, large) == 1
    _set("0")
    assert _on_host(lib, name, tiny) == 0
    _set(None)  # unset: the model, as everywhere (the simulator is not told apart)
    assert _on_host(lib, name, tiny) == 1 and _on_host(lib, name, large) == 0


def test_without_the_module_before_lowering_there_is_no_host_path() -> None:
    """``cuda.emit`` without ``host=``: the drop-in as before (the tests' and examples' CUDA unchanged)."""
    code = _code("jacobi-1d", host=False)
    assert ENV not in code and "_on_host" not in code
    assert ENV in _code("jacobi-1d")


@pytest.mark.slow
def test_the_verifier_runs_the_host_path(tmp_path: Path) -> None:
    """Stage (c) passes the emitted file, and fails one whose host path alone is wrong."""
    from transpile.verify import Options, verify_file

    name = "jacobi-1d"
    spec = polybench.spec(name)
    good = _code(name)
    start = good.index(f"static void {spec.function}_host(")
    at = good.index("0.33333", start)
    bad = good[:at] + "0.33334" + good[at + len("0.33333"):]
    for text, ok in ((good, True), (bad, False)):
        cu = tmp_path / f"{'good' if ok else 'bad'}.cu"
        cu.write_text(text)
        report = verify_file(cu, spec.path, function=spec.function,
                             options=Options(mode="quick", stages="abc", gpu=False, sanitizer=False))
        stage = report.stages["c"]
        assert (stage.status == "pass") == ok, stage.message
        if not ok:
            assert stage.check == "host-path", stage.message


def test_a_one_block_loop_is_priced_as_one_launch_and_its_barriers(tmp_path: Path) -> None:
    """durbin's host loop runs as one block while each launch has at most the cap's iterations
    (transpile/cuda/oneblock.py): the model prices it as one launch, a barrier per launch per
    iteration and the statements at one block's rate; past the cap the loop launches one by one, and
    the estimate jumps (one launch's overhead per launch per iteration)."""
    from transpile.cuda.oneblock import MAX_ITERATIONS

    spec = polybench.spec("durbin")
    code = _code("durbin")

    def later(n: int) -> float:  # the GPU estimate of a later call (no first-call setup)
        return dropin_host.estimates(code, spec.function, {"n": n}, [], tmp_path)[2]

    below, above = later(MAX_ITERATIONS - 200), later(MAX_ITERATIONS + 200)
    assert above > 2.5 * below, (below, above)


@pytest.mark.parametrize("name", ["durbin", "trisolv"])
def test_host_sums_are_split_where_reassociation_is_allowed(name: str) -> None:
    """The host path's float sum loops (durbin's ``sum += r[k-i-1] * y[i]``, trisolv's ``x[i] -=
    L[i][j] * x[j]``) are partial sums (``printer.SPLIT_SUMS``), which break the chain of dependent
    additions that bounds one core (durbin's host path was 0.7x gcc -O3's build on the H100's host);
    with ``--no-reassociate`` the loop is C's."""
    from passes.tile import Options

    module = frontend.load(polybench.spec(name).path)
    lowered = pipeline.lower(module)
    split = cuda.emit(lowered, source=f"{name}.c", host=module)
    host = split[split.index(f"static void {polybench.spec(name).function}_host("):]
    assert "_part7 += " in host and "_blocks > 0;" in host
    kept = cuda.emit(pipeline.lower(module, reassociate=False), source=f"{name}.c", host=module,
                     tiling=Options(reassociate=False))
    assert "_part" not in kept[kept.index(f"static void {polybench.spec(name).function}_host("):]


def test_split_sums_give_the_reference_results(tmp_path: Path, env: dict[str, str]) -> None:
    """trisolv's host path (an array element accumulated with ``-=`` over a triangular loop, so every
    remainder of the eight partial sums occurs) against gcc's build of the C, on two inputs."""
    name = "trisolv"
    spec = polybench.spec(name)
    lib = sim_library(_code(name), tmp_path)
    _set("1")
    for seed in (0, 1):
        args = polybench.make_args(name, np.random.default_rng(seed))
        want = polybench.run_c(name, _fresh(args))
        got = _fresh(args)
        run = lib.run(spec.function, *got.values(), restype=None)
        assert run.ok and run.launches == 0, run.diagnostics
        for k, v in want.items():
            np.testing.assert_allclose(got[k], v, rtol=1e-10, atol=1e-12, err_msg=k)


def test_no_reassociate_reaches_the_host_path_through_the_driver() -> None:
    """``driver.Options(reassociate=False)`` (the CLI's ``--no-reassociate``) keeps the host path's
    sums as written even when the tiling options say nothing of it; the default splits them."""
    from transpile import driver

    module = frontend.load(polybench.spec("durbin").path)
    head = f"static void {polybench.spec('durbin').function}_host("
    for reassociate in (True, False):
        opts = driver.Options(reassociate=reassociate)
        code = driver.emit(module, driver.lower(module, opts), "durbin.c", opts)
        assert ("_part7 += " in code[code.index(head):]) == reassociate, reassociate

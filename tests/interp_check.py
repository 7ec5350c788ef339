"""Differential checks of transforms on the IR interpreter, shared by the pass tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from transpile import ir
from transpile.ir import interp


def assert_same_results(want_m: ir.Module, got_m: ir.Module, kernel: str, args: Mapping[str, Any],
                        outputs: Iterable[str], shuffles: Iterable[int | None] = (None,), exact: bool = True) -> None:
    """``got_m`` computes what ``want_m`` computes on ``args`` (fresh copies for every run), for each
    ``shuffle`` order of its parallel loops: bit for bit, or (``exact=False``) up to reassociated reductions."""

    def fresh() -> dict[str, Any]:
        return {k: np.copy(x) if isinstance(x, np.ndarray) else x for k, x in args.items()}

    want = interp.run(want_m, kernel, fresh())
    names = list(outputs)
    for shuffle in shuffles:
        got = interp.run(got_m, kernel, fresh(), shuffle=shuffle)
        for name in names:
            if exact:
                np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name}, shuffle {shuffle}")
            else:
                np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=0, err_msg=f"{name}, {shuffle}")


def sim_library(code: str, out: Any, flags: tuple[str, ...] = ()) -> Any:
    """The emitted CUDA ``code`` built for the simulator under ``out`` (a directory), loaded; ``flags``:
    extra compiler flags (``-D`` switches)."""
    from transpile.sim.build import build
    from transpile.sim.runner import SimLibrary

    out.mkdir(parents=True, exist_ok=True)
    cu = out / "k.cu"
    cu.write_text(code)
    return SimLibrary(build(cu, out / "sim", extra_flags=flags))


def assert_sim_matches_interpreter(lib: Any, module: ir.Module, args: Mapping[str, Any], order: list[str],
                                   where: str) -> None:
    """The drop-in function of ``lib`` called on copies of ``args`` (C parameter ``order``) leaves every array
    as the interpreter does on ``module`` (to 1e-12 relative); ``where`` names the case in a failure."""
    fn = module.kernels[0].name

    def fresh() -> dict[str, Any]:
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}

    want = interp.run(module, fn, fresh())
    got = fresh()
    run = lib.run(fn, *(got[k] for k in order), restype=None)
    assert run.ok, run.diagnostics
    for a in order:
        if isinstance(got[a], np.ndarray):
            np.testing.assert_allclose(got[a], want[a], rtol=1e-12, atol=1e-14, err_msg=f"{a} {where}")

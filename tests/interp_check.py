"""Differential checks of transforms on the IR interpreter, shared by the pass tests."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from transpile import interp, ir


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

"""The real PolyBench/C 4.2.1 files lower as the project's copies do (issue 39, item 4).

``../shared/side_by_side/polybench`` holds the 30 files as their users compile them (fixed extents from
the size macros, ``POLYBENCH_2D`` declarations, ``int n`` loop bounds, the utilities' header).  Each is
lowered at ``LARGE_DATASET`` (as ``transpile FILE -I utilities -I DIR -D LARGE_DATASET --function
kernel_X`` does, without the verifier) and its launch structure (``tests/launch_structure.py``) is
compared with that of ``tests/kernels/X.c``, the copy with variable-length array parameters.  Skipped
when the folder is absent (it is looked for beside the checkout, and beside the folder of worktrees).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.launch_structure import structure
from transpile import cuda, frontend, pipeline

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "tests" / "kernels"


def _polybench() -> Path | None:
    env = os.environ.get("TRANSPILE_SIDE_BY_SIDE")
    for base in ([Path(env)] if env else []) + [ROOT.parent / "shared" / "side_by_side",
                                                ROOT.parent.parent / "shared" / "side_by_side"]:
        if (base / "polybench" / "utilities" / "benchmark_list").is_file():
            return base / "polybench"
    return None


PB = _polybench()


def _files() -> list[str]:
    if PB is None:
        return []
    lines = (PB / "utilities" / "benchmark_list").read_text().split()
    return [line.removeprefix("./") for line in lines if line.strip()]


#: Intended differences, kernel -> (index of the first launch that differs, how many launches of the
#: real file and of the copy differ there, why).  A tensor-core launch is two (its FMA kernel beside it,
#: chosen at run time: docs/architectures.md).
DIFFERS = {
    "doitgen": (0, 1, 2, "the copy's r, q loops collapse into one row index of a tensor-core matrix product "
                   "(passes/collapse.py needs A's second extent to be the loop bound nq: A[r][q][s] is "
                   "A'[r * nq + q][s] only then), the real file's A[NR][NQ][NP] gets a plain 3-D launch "
                   "over (r, q, p); both run every (r, q, p) in parallel after expansion of sum[NP]"),
}


@pytest.mark.skipif(PB is None, reason="../shared/side_by_side is not here")
@pytest.mark.parametrize("rel", _files() or ["none"])
def test_real_file_lowers_as_the_copy(rel: str) -> None:
    assert PB is not None
    name = Path(rel).stem
    function = "kernel_" + name.replace("-", "_")
    path = PB / rel
    real_m = frontend.load(path, function=function, include_dirs=[str(PB / "utilities"), str(path.parent)],
                           defines=["LARGE_DATASET"])
    copy_m = frontend.load(KERNELS / f"{name.replace('-', '_')}.c", function=function)
    real = structure(cuda.emit(pipeline.lower(real_m, verify_each=False), source=path.name), function)
    copy = structure(cuda.emit(pipeline.lower(copy_m, verify_each=False), source=path.name), function)
    if name in DIFFERS:
        i, n_real, n_copy, _why = DIFFERS[name]
        assert real[:i] + real[i + n_real:] == copy[:i] + copy[i + n_copy:]
        assert real[i:i + n_real] != copy[i:i + n_copy], f"{name} now lowers as the copy: remove it from DIFFERS"
    else:
        assert real == copy

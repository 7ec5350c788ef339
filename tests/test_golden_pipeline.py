"""Golden files for the whole pipeline's CUDA on a handful of PolyBench kernels.

Each shape of emitted code has one representative: gemm (tiled, shared-memory
matmul), atax (one warp per row reduction), trisolv (a block reduction inside
a host loop), jacobi-2d (host time loop around 2-D launches), seidel-2d
(wavefront), fdtd-2d (a time step's launches fused into one kernel, transpile/cuda/steps.py).  A change in the generated text must be reviewed:
``pytest tests/test_golden_pipeline.py --update-goldens`` rewrites the files,
and ``git diff tests/golden/pipeline`` shows what moved.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import polybench
from transpile import cuda, pipeline
from transpile.frontend import c as cfront

GOLDEN = Path(__file__).parent / "golden" / "pipeline"


@pytest.mark.parametrize("name", ["gemm", "atax", "trisolv", "jacobi-2d", "seidel-2d", "fdtd-2d"])
def test_pipeline_golden(name: str, update_goldens: bool) -> None:
    spec = polybench.spec(name)
    module = pipeline.lower(cfront.parse_file(str(spec.path), function=spec.function))
    text = cuda.emit(module, source=spec.path.name)
    path = GOLDEN / f"{name}.cu"
    if update_goldens:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} is missing; run with --update-goldens"
    assert path.read_text() == text, f"{path} is stale; rerun with --update-goldens and review the diff"

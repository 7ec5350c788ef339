"""Grid reductions (transpile/cuda_reduce.grid_launch): a reduction outside any host loop runs over
the whole GPU, a partials kernel of many blocks and a one-thread fold, instead of one block of 256
threads.  The verifier's shapes stay under one block's chunk (n <= 1025), so these tests run the
simulator against the interpreter at sizes with several blocks, and with the block size and count
made small so that the cap and the grid stride are crossed too."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.interp_check import assert_sim_matches_interpreter, sim_library
from transpile import cuda, pipeline
from transpile.cuda import reduce as cuda_reduce
from transpile.ir import text

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the simulator needs g++")

# Two sums in one loop, and the statements around it (thread 0's, now the fold's).
MOMENTS = """kernel moments(i32 n, f64 c, in f64 x[n], out f64 out[3]) {
  f64 s = 0.0;
  f64 q = 0.0;
  out[2] = c;
  for i in 0..n {
    s += x[i];
    q += x[i] * x[i];
  }
  out[0] = s;
  out[1] = q / f64(n + 1);
}
"""
# A max over a range that starts at 3, in float.
RANGE_MAX = """kernel rmax(i32 n, in f32 x[n], out f32 out[1]) {
  f32 m = -1000.0f;
  for i in 3..n - 2 {
    m = fmaxf(m, x[i] * 2.0f);
  }
  out[0] = m;
}
"""
# An integer sum, counting down.
COUNT = """kernel count(i32 n, in i32 x[n], out i64 out[1]) {
  i64 c = 0L;
  for i in 0..n step -1 {
    c += i64(x[i]) * i64(i);
  }
  out[0] = c;
}
"""
# Thread 0's statement before the loop writes what the terms read: not a grid reduction.
BEFORE = """kernel before(i32 n, in f64 x[n], inout f64 w[1], out f64 out[1]) {
  f64 s = 0.0;
  w[0] = w[0] * 2.0;
  for i in 0..n {
    s += x[i] * w[0];
  }
  out[0] = s;
}
"""


def _emit(src: str) -> tuple[str, object]:
    module = text.parse(src)
    return cuda.emit(pipeline.lower(module), source="k.ir"), module


@pytest.mark.parametrize("src", [MOMENTS, RANGE_MAX, COUNT])
def test_top_level_reductions_become_grid_launches(src: str) -> None:
    code, module = _emit(src)
    name = module.kernels[0].name  # type: ignore[attr-defined]
    assert f"{name}_kernel0_fold<<<dim3(1u, 1u, 1u), dim3(1u, 1u, 1u)" in code
    assert f"#define TRANSPILE_GRID_MAX_BLOCKS {cuda_reduce.GRID_MAX_BLOCKS}" in code
    assert "if (blocks > TRANSPILE_GRID_MAX_BLOCKS) blocks = TRANSPILE_GRID_MAX_BLOCKS;" in code


def test_terms_reading_what_thread_0_writes_first_keep_one_block() -> None:
    code, _ = _emit(BEFORE)
    assert "_fold<<<" not in code and "__launch_bounds__(256) before_kernel" in code


def _args(module: object, n: int, rng: np.random.Generator) -> tuple[dict[str, object], list[str]]:
    k = module.kernels[0]  # type: ignore[attr-defined]
    args: dict[str, object] = {}
    for p in k.params:
        if p.name == "n":
            args["n"] = np.int32(n)
        elif p.name == "c":
            args["c"] = 0.5
        elif p.name == "out":
            args["out"] = np.full(3 if k.name == "moments" else 1, np.nan if p.ty.elem.is_float else -1,
                                  dtype={"f64": np.float64, "f32": np.float32, "i64": np.int64}[p.ty.elem.name])
        elif p.ty.elem.name == "i32":
            args[p.name] = rng.integers(-50, 50, n).astype(np.int32)
        else:
            args[p.name] = rng.uniform(-1, 1, n).astype(np.float64 if p.ty.elem.name == "f64" else np.float32)
    return args, [p.name for p in k.params]


@needs_gxx
@pytest.mark.parametrize("src", [MOMENTS, RANGE_MAX, COUNT])
@pytest.mark.parametrize("small", [False, True])
def test_grid_reductions_match_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, src: str,
                                               small: bool) -> None:
    if small:  # 4 iterations a block, at most 3 blocks: the cap and the grid stride at small n
        monkeypatch.setattr(cuda_reduce, "GRID_CHUNK", 4)
        monkeypatch.setattr(cuda_reduce, "GRID_MAX_BLOCKS", 3)
    code, module = _emit(src)
    lib = sim_library(code, tmp_path)
    rng = np.random.default_rng(7)
    sizes = (1, 5, 6, 13, 700, 3000) if small else (1, 2047, 2048, 2049, 5003)
    for n in sizes:
        args, order = _args(module, n, rng)
        assert_sim_matches_interpreter(lib, module, args, order, f"n={n}, small={small}")


@needs_gxx
def test_one_block_by_switch_matches_the_interpreter(tmp_path: Path) -> None:
    # -DTRANSPILE_GRID_MAX_BLOCKS=1: one block strides over everything (the form timed against).
    code, module = _emit(MOMENTS)
    lib = sim_library(code, tmp_path, ("-DTRANSPILE_GRID_MAX_BLOCKS=1",))
    rng = np.random.default_rng(9)
    for n in (3, 5003):
        args, order = _args(module, n, rng)
        assert_sim_matches_interpreter(lib, module, args, order, f"n={n}, one block")

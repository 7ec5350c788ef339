"""One-block host loops (transpile/cuda/oneblock.py): which loops, the code, both paths against the interpreter."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from passes import launch_forms
from tests import polybench
from tests.interp_check import assert_sim_matches_interpreter, sim_library
from transpile import cuda, ir, pipeline
from transpile.cuda import oneblock as cuda_oneblock
from transpile.cuda import printer
from transpile.frontend import c as cfront
from transpile.ir import text

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the simulator needs g++")


def _module(name: str) -> ir.Module:
    spec = polybench.spec(name)
    return cfront.parse_file(str(spec.path), function=spec.function)


def host_loops(m: ir.Module) -> list[ir.For]:
    return [s for s in m.kernels[0].body if printer.is_host_loop(s)]  # type: ignore[misc]


@pytest.mark.parametrize("name, want", [("jacobi-1d", [True]), ("trisolv", [True]), ("adi", [False]),
                                        ("durbin", [True])])
def test_which_host_loops_are_eligible(name: str, want: list[bool]) -> None:
    # jacobi-1d: two plain launches a time step; trisolv: a single-thread launch and a plain one a
    # column; durbin: a one-block reduction, two plain launches, a single-thread one.  adi's
    # launches each run a sweep (a loop a thread: one block would serialise the grid).
    lowered = pipeline.lower(_module(name))
    assert [launch_forms.oneblock_eligible(lp) for lp in host_loops(lowered)] == want


def test_triangular_and_non_affine_counts_are_not_eligible() -> None:
    # Mapped IR as map_gpu leaves it: a host loop over t around launches.
    def loop(i_hi: str, j_lo: str, body: str = "A[i][j] = A[i][j] + 1.0;") -> ir.For:
        src = f"""kernel k(i32 n, f64 s, inout f64 A[n][n]) {{
  for t in 1..n {{
    launch {{
      for i in 0..{i_hi} par(y) {{
        for j in {j_lo}..n par(x) {{
          {body}
        }}
      }}
    }}
  }}
}}"""
        (s,) = text.parse(src).kernels[0].body
        assert isinstance(s, ir.For)
        return s

    assert launch_forms.oneblock_eligible(loop("t", "0"))  # the count (t * n) is affine in t
    assert not launch_forms.oneblock_eligible(loop("n", "i"))  # triangular: j's bounds read i
    assert not launch_forms.oneblock_eligible(loop("t * t", "0"))  # not affine in t
    assert not launch_forms.oneblock_eligible(loop("n", "0", "for k in 0..n { A[i][j] = A[i][j] + 1.0; }"))


def test_the_code_runs_the_loop_in_one_block_or_launch_by_launch() -> None:
    code = cuda.emit(pipeline.lower(_module("trisolv")), source="trisolv.c")
    assert "__global__ void __launch_bounds__(1024) kernel_trisolv_loop(" in code
    assert 'getenv("TRANSPILE_ONEBLOCK_MAX")' in code
    assert re.search(r"if \(one_block\) \{.*\n\s*kernel_trisolv_loop<<<dim3\(1u\), dim3\(1024u\)", code)
    # the launches one by one in the else branch, as without the feature
    assert "} else {\n      for (int j = 0; j < n; ++j) {\n        kernel_trisolv_kernel1<<<" in code
    # the single-thread launch runs on thread 0, a barrier after each launch
    loop = code[code.index("kernel_trisolv_loop("):code.index("// Runs kernel_trisolv")]
    assert "if (threadIdx.x == 0) {\n      x[j] /= L[(long long)j * n + j];" in loop
    assert loop.count("__syncthreads();") == 2
    # the naive mapping (the benchmark's baseline) keeps its launches
    naive = cuda.emit(pipeline.lower(_module("trisolv"), naive=True), source="trisolv.c",
                      tiling=__import__("passes.tile", fromlist=["Options"]).Options(enabled=False))
    assert "kernel_trisolv_loop" not in naive


@pytest.mark.parametrize("name", ["ludcmp", "durbin", "trisolv"])
def test_the_host_side_declares_only_what_it_uses(name: str) -> None:
    # The first and last iterations are declared only where a plain launch's count is taken there:
    # ludcmp's substitution loops hold reductions alone (nvcc warned of unused variables).
    code = cuda.emit(pipeline.lower(_module(name)), source=f"{name}.c")
    declared = re.findall(r"const long long (\w+_(?:first|last)\d*) =", code)
    assert declared or name == "ludcmp"
    for v in declared:
        assert len(re.findall(rf"\b{v}\b", code)) > 1, v


def test_a_reduction_sets_the_block_and_device_scalars_stay_in_memory() -> None:
    code = cuda.emit(pipeline.lower(_module("durbin")), source="durbin.c")
    loop = code[code.index("kernel_durbin_loop("):code.index("// Scalars written on the device")]
    assert "kernel_durbin_loop<<<dim3(1u), dim3(256u), 0, stream>>>" in code  # the reduction's 256 threads
    assert "__launch_bounds__(256) kernel_durbin_loop(" in code
    # each body loads the device scalars it reads and thread 0 stores what the reduction wrote
    assert loop.count("const double alpha = *alpha_ptr;") == 2 and "*alpha_ptr = alpha;" in loop


def test_an_array_one_launch_reads_and_another_writes_is_not_const() -> None:
    code = cuda.emit(pipeline.lower(_module("jacobi-1d")), source="jacobi-1d.c")
    head = re.search(r"kernel_jacobi_1d_loop\(([^)]*)\)", code)
    assert head is not None
    assert "double *A" in head.group(1) and "const double *A" not in head.group(1)
    assert "__restrict__" not in head.group(1)  # nvcc may keep values across the barriers otherwise


@needs_gxx
@pytest.mark.parametrize("name, sizes", [("trisolv", [1, 2, 7, 100, 300]), ("jacobi-1d", [3, 4, 50, 2500]),
                                         ("durbin", [1, 2, 3, 70, 600])])
@pytest.mark.parametrize("cap", ["", "0", "60"])
def test_both_paths_match_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                                          sizes: list[int], cap: str) -> None:
    """Default cap (8192: one block at these sizes, 2500 > 1024 threads included), 0 (launch by
    launch), 60 (one block only where every launch has at most 60 iterations)."""
    if cap:
        monkeypatch.setenv(cuda_oneblock.ENV, cap)
    else:
        monkeypatch.delenv(cuda_oneblock.ENV, raising=False)
    module = _module(name)
    lib = sim_library(cuda.emit(pipeline.lower(module), source=f"{name}.c"), tmp_path)
    for n in sizes:
        rng = np.random.default_rng(n)
        if name == "trisolv":
            L = np.tril(rng.random((n, n)) * 0.1) + np.eye(n)
            args: dict[str, object] = {"n": n, "L": L, "x": rng.random(n), "b": rng.random(n)}
            order = ["n", "L", "x", "b"]
        elif name == "durbin":  # a decaying autocorrelation keeps the recursion stable
            args = {"n": n, "r": 0.5 ** np.arange(1, n + 1) * rng.uniform(0.5, 1.0, n), "y": rng.random(n)}
            order = ["n", "r", "y"]
        else:
            args = {"tsteps": 5, "n": n, "A": rng.random(n), "B": rng.random(n)}
            order = ["tsteps", "n", "A", "B"]
        assert_sim_matches_interpreter(lib, module, args, order, f"at n={n}")
    assert os.environ.get(cuda_oneblock.ENV, "") == cap


@needs_gxx
def test_the_verifier_checks_the_launch_by_launch_path(tmp_path: Path) -> None:
    """A fault in the kernels only the launch-by-launch path runs (the one-block kernel has its own
    copy of their bodies) is found by stage (c)'s run L."""
    from transpile.verify.stages import Options, verify_file

    spec = polybench.spec("jacobi-1d")
    code = cuda.emit(pipeline.lower(_module("jacobi-1d")), source="jacobi-1d.c")
    good = "B[i] = 0.33333 * (A[i - 1]"
    assert code.count(good) == 2  # the launch's kernel, then the one-block kernel
    cu = tmp_path / "bad.cu"
    cu.write_text(code.replace(good, "B[i] = 0.33433 * (A[i - 1]", 1))
    rep = verify_file(cu, spec.path, function=spec.function, options=Options(mode="quick", stages="abc", seed=1))
    c = rep.stages["c"]
    assert c.status == "fail" and c.check == "launch-by-launch", c.message


def test_a_loop_the_plan_declines_is_emitted_as_without_the_feature(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-block choice is made before printing (passes/launch_forms.py marks an eligible loop whose
    launches all take a form without a fold or a guard of their own).  A loop declined for its
    launches' forms gets the code an ineligible loop gets, byte for byte; only an accepted loop's
    steps go one level deeper, into the else branch."""
    lowered = pipeline.lower(_module("trisolv"))
    assert "kernel_trisolv_loop" in cuda.emit(lowered, source="trisolv.c")
    monkeypatch.setattr(launch_forms, "ONE_BLOCK", frozenset())
    declined = cuda.emit(lowered, source="trisolv.c")
    monkeypatch.setattr(launch_forms, "oneblock_eligible", lambda *a, **k: False)
    assert declined == cuda.emit(lowered, source="trisolv.c")
    assert "kernel_trisolv_loop" not in declined

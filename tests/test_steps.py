"""Fused time steps (transpile/cuda/steps.py): which loops, their halos, both paths against the interpreter."""

from __future__ import annotations

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
from transpile.cuda import steps as cuda_steps
from transpile.frontend import c as cfront
from transpile.ir import text

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the simulator needs g++")


def _polybench(name: str) -> ir.Module:
    spec = polybench.spec(name)
    return cfront.parse_file(str(spec.path), function=spec.function)


def _plans(module: ir.Module) -> list[cuda_steps.Plan | None]:
    """The plan of each innermost host loop (a host loop without host loops inside)."""
    lowered = pipeline.lower(module)
    emitter = cuda._KernelEmitter(lowered.kernels[0], set())

    def innermost(body: tuple[ir.Stmt, ...]) -> list[ir.For]:
        loops = [s for s in body if printer.is_host_loop(s)]
        return [x for lp in loops for x in (innermost(lp.body) or [lp])]  # type: ignore[attr-defined]

    return [cuda_steps.plan(emitter, s) for s in innermost(lowered.kernels[0].body)]


# Three arrays written a step, each launch reading the others at offsets: 9 words a point a step as
# launches, 6 fused.  A boundary column (the last axis fixed), offsets of 2, a read-only array.
TWO_D = """kernel k2(i32 T, i32 n, i32 m, inout f64 A[n][m], inout f64 B[n][m], inout f64 D[n][m], in f64 C[n][m]) {
  for t in 0..T {
    for i in 0..n {
      A[i][0] = C[i][1] * 0.5;
    }
    for i in 2..n - 1 {
      for j in 1..m {
        B[i][j] = 0.25 * (A[i - 2][j] + A[i + 1][j - 1]) + C[i][j] - D[i][j];
      }
    }
    for i in 0..n {
      for j in 0..m - 2 {
        D[i][j] = D[i][j] * 0.5 + B[i][j + 2] - A[i][j];
      }
    }
    for i in 1..n {
      for j in 0..m {
        A[i][j] = A[i][j] + 0.125 * (B[i - 1][j] - D[i][j]);
      }
    }
  }
}
"""

# Down the time loop, two at a time, the host variable read by the boundary launch: each later step of a
# kernel reads t - 2, t - 4.
TWO_D_DOWN = TWO_D.replace("for t in 0..T {", "for t in 0..T step -2 {").replace(
    "A[i][0] = C[i][1] * 0.5;", "A[i][0] = C[i][1] * 0.5 + t;")
assert TWO_D_DOWN.count("step -2") == 1 and TWO_D_DOWN.count("+ t;") == 1

# The time loop inside another host loop: the fused loop's scratch is allocated once a call.
NESTED = TWO_D.replace("  for t in 0..T {", "  for r in 0..2 {\n  for t in 0..T {").replace(
    "\n  }\n}\n", "\n  }\n  }\n}\n")
assert NESTED.count("for r in 0..2") == 1

THREE_D = """kernel k3(i32 T, i32 n, inout f64 U[n][n][n], inout f64 V[n][n][n], inout f64 W[n][n][n]) {
  for t in 0..T {
    for i in 1..n - 1 {
      for j in 1..n - 1 {
        for k in 1..n - 1 {
          V[i][j][k] = 0.5 * U[i][j][k] + 0.125 * (U[i - 1][j][k] + U[i][j + 1][k] + W[i][j][k - 1]);
        }
      }
    }
    for i in 0..n {
      for j in 0..n - 1 {
        for k in 0..n {
          W[i][j][k] = 0.5 * W[i][j][k] + 0.25 * (V[i][j + 1][k] - U[i][j][k]);
        }
      }
    }
    for i in 1..n {
      for j in 0..n {
        for k in 0..n - 1 {
          U[i][j][k] = U[i][j][k] + 0.25 * (V[i - 1][j][k] - W[i][j][k + 1]);
        }
      }
    }
  }
}
"""


def test_fdtd_2d_fuses_with_the_halos_its_launches_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda_steps, "STEPS", 1)
    (p,) = _plans(_polybench("fdtd-2d"))
    assert p is not None and p.rank == 2 and p.written == ("ey", "ex", "hz")
    # hz is read at i - 1 (by ey's launch) and j - 1 (by ex's), over the boxes where the hz launch reads
    # ey one row down and ex one column right.
    assert p.halo == {"ey": ((0, 1), (0, 0)), "ex": ((0, 0), (0, 1)), "hz": ((1, 1), (1, 1))}
    assert [ph.box for ph in p.phases] == [((0, 1), (0, 0)), ((0, 1), (0, 0)), ((0, 0), (0, 1)), ((0, 0), (0, 0))]
    assert p.phases[0].axis_var == (None, "j")  # ey[0][j]: the row is fixed


@pytest.mark.parametrize("name, steps", [("fdtd-2d", 3), ("jacobi-2d", 3), ("jacobi-1d", 16), ("heat-3d", None)])
def test_the_most_steps_that_fit(name: str, steps: int | None) -> None:
    # Up to MAX_STEPS a kernel while the boxes fit SMEM_LIMIT.  heat-3d: one step would move 3 words a
    # point against its launches' 4 (not under TRAFFIC), two steps' boxes (4 planes of halo around
    # 4 x 8 x 32) take more shared memory than the limit.
    (p,) = _plans(_polybench(name))
    assert (p and p.steps) == steps


@pytest.mark.parametrize("name", ["jacobi-2d", "jacobi-1d"])
def test_an_array_written_before_any_read_is_loaded_only_at_the_edges(monkeypatch: pytest.MonkeyPatch,
                                                                        name: str) -> None:
    # B = f(A), then A = g(B): B's old values are needed only where B's launch does not write its whole
    # box (the boundary), so a step moves 3 words a point (A in, A and B out) against the launches' 4,
    # which is not enough (TRAFFIC) for one step a kernel; two steps move 3 words a point for both.
    monkeypatch.setattr(cuda_steps, "STEPS", 1)
    assert _plans(_polybench(name)) == [None]
    monkeypatch.setattr(cuda_steps, "STEPS", 2)
    (p,) = _plans(_polybench(name))
    assert p is not None and p.overwritten == {"B": 0}
    rank = p.rank
    assert p.halo == {"B": ((3, 3),) * rank, "A": ((4, 4),) * rank}


def _host_loop(body: str) -> tuple[cuda._KernelEmitter, ir.For]:
    src = f"""kernel k(i32 T, i32 n, inout f64 A[n][n], inout f64 B[n][n], inout f64 C[n][n]) {{
  for t in 0..T {{
{body}
  }}
}}"""
    kernel = launch_forms.run(text.parse(src).kernels[0])
    (loop,) = kernel.body
    assert isinstance(loop, ir.For)
    return cuda._KernelEmitter(kernel, set()), loop


def _launch(target: str, value: str, lo: str = "1", hi: str = "n - 1") -> str:
    return (f"    launch {{\n      for i in {lo}..{hi} par(y) {{\n        for j in {lo}..{hi} par(x) {{\n"
            f"          {target} = {value};\n        }}\n      }}\n    }}")


def test_what_the_plan_refuses() -> None:
    good = [_launch("A[i][j]", "B[i][j - 1] + C[i][j]"), _launch("B[i][j]", "A[i + 1][j] + C[i][j]"),
            _launch("C[i][j]", "A[i][j] + B[i][j]")]
    emitter, loop = _host_loop("\n".join(good))
    assert cuda_steps.plan(emitter, loop) is not None
    cases = {
        "a subscript that is no constant offset from the target": _launch("B[i][j]", "A[j][i] + C[i][j]"),
        "a launch reading its own target at another element": _launch("B[i][j]", "B[i][j + 1] + A[i][j]"),
        "a target that is not one par variable per axis": _launch("B[i][i]", "A[i][j] + C[i][j]"),
        "a par variable scaled": _launch("B[i][2 * j]", "A[i][j] + C[i][j]"),
    }
    for why, bad in cases.items():
        emitter, loop = _host_loop("\n".join([good[0], bad, good[2]]))
        assert cuda_steps.plan(emitter, loop) is None, why
    # a body with more than the assignment (an if) is not a stencil launch
    emitter, loop = _host_loop("\n".join([good[0], good[1].replace(
        "B[i][j] = A[i + 1][j] + C[i][j];", "if (i > 2) { B[i][j] = A[i + 1][j] + C[i][j]; }"), good[2]]))
    assert cuda_steps.plan(emitter, loop) is None


def test_the_code_fuses_a_step_and_keeps_the_launches_as_fallback() -> None:
    code = cuda.emit(pipeline.lower(_polybench("fdtd-2d")), source="fdtd_2d.c")
    fused = code[code.index("kernel_fdtd_2d_steps("):]
    fused = fused[:fused.index("\n}\n")]
    assert "__shared__ double hz_s[1540];  // its tile and halo, 22 x 70" in fused  # 3 steps, 16 x 64 tiles
    assert fused.count("__syncthreads();") == 14  # after the loads, each of 3 x 4 launches, the stores
    assert 'getenv("TRANSPILE_STEPS")' in code
    # the one-block loop first (small sizes), then the fused steps, then the launches one by one
    one = code.index("if (one_block) {")
    steps = code.index("if (steps_ok) {", one)
    apart = code.index("kernel_fdtd_2d_kernel3<<<", steps)
    assert one < steps < apart
    assert "cudaMemcpyDeviceToDevice" in code[steps:apart]  # an odd number of kernels copies back once
    # scratch allocated once a call, also where the loop runs inside another host loop
    assert code.count("if (steps_ok && ey_steps_scratch == NULL) {") == 1
    # the naive mapping (the benchmark's baseline) launches one by one
    naive = cuda.emit(pipeline.lower(_polybench("fdtd-2d"), naive=True), source="fdtd_2d.c",
                      tiling=__import__("passes.tile", fromlist=["Options"]).Options(enabled=False))
    assert "kernel_fdtd_2d_steps" not in naive


def _args(module: ir.Module, sizes: dict[str, int], rng: np.random.Generator) -> tuple[dict[str, object], list[str]]:
    """Random arrays of the shapes ``sizes`` give (the verifier's signature), the sizes, and the C order."""
    from transpile.verify.signature import kernel_sig

    sig = kernel_sig(module.kernels[0])
    args: dict[str, object] = {a.name: rng.uniform(-1, 1, sig.shape(a, sizes)) for a in sig.arrays}
    args.update(sizes)
    return args, [prm.name for prm in module.kernels[0].params]


@needs_gxx
@pytest.mark.parametrize("source, sizes", [
    ("fdtd-2d", [{"tmax": 3, "nx": 9, "ny": 65}, {"tmax": 2, "nx": 17, "ny": 130}, {"tmax": 1, "nx": 1, "ny": 1},
                 {"tmax": 7, "nx": 3, "ny": 200}]),
    (TWO_D, [{"T": 3, "n": 9, "m": 66}, {"T": 2, "n": 18, "m": 129}, {"T": 1, "n": 4, "m": 3}, {"T": 7, "n": 11, "m": 9}]),
    (THREE_D, [{"T": 3, "n": 9}, {"T": 2, "n": 34}, {"T": 1, "n": 2}, {"T": 4, "n": 6}]),
    (TWO_D_DOWN, [{"T": 7, "n": 9, "m": 66}, {"T": 5, "n": 18, "m": 70}, {"T": 1, "n": 4, "m": 3}]),
    (NESTED, [{"T": 3, "n": 9, "m": 66}, {"T": 2, "n": 17, "m": 5}]),
], ids=["fdtd-2d", "two-d", "three-d", "two-d-down", "nested"])
@pytest.mark.parametrize("steps", [1, 3])
def test_fused_and_one_by_one_match_the_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str,
                                                    sizes: list[dict[str, int]], steps: int) -> None:
    """Sizes across the tiles' edges (16 x 64 in 2-D, 4 x 8 x 32 in 3-D), odd and even kernel counts (an
    odd count copies the scratch back), arrays smaller than a tile; one time step a kernel, and three (a
    loop's last kernel runs fewer when the count is not a multiple)."""
    monkeypatch.setattr(cuda_steps, "STEPS", steps)
    module = _polybench(source) if not source.startswith("kernel") else text.parse(source)
    (p,) = _plans(module)
    if source is THREE_D and steps == 3:  # halos of several planes on each side: boxes over the shared memory limit
        assert p is None
        return
    assert p is not None and p.steps == steps
    lib = sim_library(cuda.emit(pipeline.lower(module), source="k.c"), tmp_path)
    monkeypatch.setenv(cuda_oneblock.ENV, "0")  # the small sizes would otherwise run in one block
    for fused in ("1", "0"):
        monkeypatch.setenv(cuda_steps.ENV, fused)
        for n, size in enumerate(sizes):
            args, order = _args(module, size, np.random.default_rng(n))
            assert_sim_matches_interpreter(lib, module, args, order, f"at {size}, {cuda_steps.ENV}={fused}")


@needs_gxx
def test_the_verifier_checks_the_fused_and_the_one_by_one_paths(tmp_path: Path) -> None:
    """A fault in the fused kernel is found by stage (c)'s run L, one in a launch's kernel (which only
    the one-by-one fallback runs) by run S."""
    from transpile.verify.stages import Options, verify_file

    spec = polybench.spec("fdtd-2d")
    code = cuda.emit(pipeline.lower(_polybench("fdtd-2d")), source="fdtd_2d.c")
    fused_at = code.index("kernel_fdtd_2d_steps(")
    apart_at = code.index("kernel_fdtd_2d_kernel2(")
    for at, label in ((fused_at, "L"), (apart_at, "S")):
        hit = code.index("0.5 * (", at)
        cu = tmp_path / f"bad{label}.cu"
        cu.write_text(code[:hit] + "0.25 * (" + code[hit + len("0.5 * ("):])
        rep = verify_file(cu, spec.path, function=spec.function, options=Options(mode="quick", stages="abc", seed=1))
        c = rep.stages["c"]
        assert c.status == "fail" and c.check == "launch-by-launch", c.message
        want = "fused steps where" if label == "L" else "TRANSPILE_STEPS=0"
        assert want in c.message, c.message


def test_no_fuse_steps_flag_and_the_evolve_knob(tmp_path: Path) -> None:
    from tests.test_cli import transpile as run_cli
    from transpile.search.evolve import Schedule

    src = polybench.spec("fdtd-2d").path
    out = tmp_path / "off.cu"
    proc = run_cli(str(src), "--no-fuse-steps", "--no-verify", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "_steps(" not in out.read_text() and "kernel_fdtd_2d_kernel3" in out.read_text()
    off = Schedule.parse("steps=off")
    assert off.options().steps is False and off.name() == "steps=off"
    apart = off.emit(off.lower(_polybench("fdtd-2d")), "fdtd_2d.c")
    assert "kernel_fdtd_2d_steps" not in apart
    assert "kernel_fdtd_2d_steps" in Schedule().emit(Schedule().lower(_polybench("fdtd-2d")), "fdtd_2d.c")

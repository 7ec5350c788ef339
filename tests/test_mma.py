"""The fp64 tensor-core path: transpile/cuda/mma.py and templates/mma_matmul.cu.j2.

Which launches take it (bilinear f64 updates, reassociation allowed); the
emitted lambda's shuffle emulation of each ``mma.sync`` f64 shape equals a
numpy product under the PTX fragment layout (the same layout the H200 ran
correctly at EXTRALARGE, bench/results/h200_run20a_mma.md); the CUDA builds for sm_90
without spills; the CPU simulation (stage c) matches the C reference at sizes
off the tile grid; ``--no-mma``/``--no-reassociate`` keep the FMA kernel.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from passes import tile
from transpile import cuda, frontend, ir, pipeline
from transpile.cuda import mma as cuda_mma
from transpile.verify import Options, Report, simstage, verify_module

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"


needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
#: The instruction in an emitted kernel (one per tensor-core kernel, in its lambda).
DMMA = re.compile(r"mma\.sync\.aligned\.m(\d+)n8k(\d+)\.row\.col\.f64\.f64\.f64\.f64")

#: Kernel -> launches on tensor cores (every tiled launch of the seven).
MMA = {"gemm": 1, "2mm": 2, "3mm": 3, "syrk": 1, "syr2k": 1, "covariance": 1, "correlation": 1,
       "trmm": 1, "symm": 2}  # trmm: triangular k; symm: a scalar form and a triangular k


def _emit(name: str, options: tile.Options | None = None, *, reassociate: bool = True) -> str:
    module = pipeline.lower(frontend.load(KERNELS / f"{name}.c"), reassociate=reassociate)
    return cuda.emit(module, source=f"{name}.c", tiling=options)


def _plans(name: str, options: tile.Options | None = None) -> list[tile.Plan]:
    module = pipeline.lower(frontend.load(KERNELS / f"{name}.c"))
    launches = [s for k in module.kernels for s in ir.walk(k) if isinstance(s, ir.Launch)]
    return [p for p in (tile.plan(x, options) if options else tile.plan(x) for x in launches) if p is not None]


@pytest.mark.parametrize("name", sorted(MMA))
def test_bilinear_terms(name: str) -> None:
    found = [cuda_mma.terms(p) for p in _plans(name)]
    assert len(found) == MMA[name] and all(found)
    assert all(t is not None and len(t) == (2 if name == "syr2k" else 1) for t in found)


def test_gemm_stages_alpha_times_a() -> None:
    (p,) = _plans("gemm")
    (t,) = cuda_mma.terms(p)  # type: ignore[misc]
    assert t.row == p.update.value.rhs.lhs and t.row_klast and not t.col_klast  # type: ignore[union-attr]
    # One target (sm_90): the tensor-core kernel alone, without its FMA kernel (tests/test_arches.py).
    out = _emit("gemm", tile.Options(mma_shape=(128, 64, 16, 32, 32, 1), arch=90))  # register prefetch: computed
    assert "= alpha * A[(long long)i * nk + k];" in out and DMMA.search(out)
    assert out.count("__syncthreads();") == 2 and "cp.async" not in out
    out = _emit("gemm", tile.Options(arch=90))  # cp.async copies elements: alpha * A[i][k] is computed from shared memory
    assert re.search(r"fa\[sx\]\[fm\] = alpha \* s\w+\[cur\]\[kx \+ q\]\[wr \+ 8 \* fm \+ g\];", out), out
    assert out.count("cp.async.ca.shared.global") == 1 and out.count("__syncthreads();") == 2


def test_options_turn_the_path_off() -> None:
    for opts in (tile.Options(mma=False), tile.Options(shared=False)):
        assert not DMMA.search(_emit("gemm", opts))
    assert "Block tiles of 64x64" in _emit("gemm", tile.Options(mma=False))
    assert tile.Options(mma_shape=(64, 64, 16, 32, 12, 1)).problem() is not None
    assert tile.Options(mma_shape=(64, 64, 16, 32, 32, 1)).problem() is None
    assert tile.Options(mma_inst=(8, 8)).problem() is not None and tile.Options(mma_inst=(16, 16)).problem() is None


@pytest.mark.parametrize("inst, wm, bk, used", [
    ((16, 8), 32, 8, (16, 8)), ((16, 16), 32, 16, (16, 16)), ((16, 16), 32, 8, (16, 8)), ((16, 8), 8, 8, (8, 4)),
    ((16, 4), 48, 8, (16, 4)), ((16, 8), 24, 16, (8, 4)), ((8, 4), 32, 16, (8, 4)), ((16, 16), 16, 4, (16, 4)),
])
def test_instruction_falls_back_to_what_the_tile_allows(inst: tuple[int, int], wm: int, bk: int,
                                                         used: tuple[int, int]) -> None:
    i = cuda_mma.instruction(inst, wm, bk)
    assert (i.rows, i.k) == used and wm % i.rows == 0 and bk % i.k == 0


@pytest.mark.parametrize("inst", tile.MMA_INSTRUCTIONS, ids=lambda i: f"m{i[0]}n8k{i[1]}")
def test_emitted_instruction_is_the_requested_one(inst: tuple[int, int]) -> None:
    out = _emit("gemm", tile.Options(mma_shape=(64, 64, 16, 32, 32, 2), mma_inst=inst))
    assert [tuple(map(int, m)) for m in DMMA.findall(out)] == [inst]
    nd, na, nb = cuda_mma.Instruction(*inst).counts
    assert f"const double av[{na}]" in out and f"const double bv[{nb}]" in out and f"double *const dv[{nd}]" in out


@pytest.mark.parametrize("body", [
    "for k in 0..n { C[i][j] += A[i][k] * B[k][j] * a; }",  # (A*B)*a: the factors mix sides
    "for k in 0..n { C[i][j] -= A[i][k] * B[k][j]; }",  # not X + ...
    "for k in 0..n { C[i][j] += A[i][k] + B[k][j]; }",  # not a product
    "for k in 0..n { C[i][j] = C[i][j] * A[i][k] + B[k][j]; }",  # not X + ...
])
def test_non_bilinear_updates_keep_the_fma_path(body: str) -> None:
    from transpile.ir import text

    head = "kernel k(i32 n, f64 a, inout f64 C[n][n], in f64 A[n][n], in f64 B[n][n]) {\n launch {\n"
    k = text.parse_kernel(head + "for i in 0..n par(y) {\n for j in 0..n par(x) {\n" + body + "\n}\n}\n }\n}\n")
    (launch,) = [s for s in k.body if isinstance(s, ir.Launch)]
    p = tile.plan(launch)
    assert p is not None and cuda_mma.terms(p) is None


# ---------------------------------------------------------------------------
# The instruction's emulation against numpy (PTX ISA fragment layouts of the f64 shapes).

_HARNESS = """
#include <cuda_runtime.h>
#include <math.h>
__global__ void dmma_kernel(const double *A, const double *B, double *D)
{
LAMBDA
  const int l = (int)threadIdx.x, g = l >> 2, q = l & 3;
  double d[4], a[8], b[4];
  for (int h = 0; h < DMMA_H; ++h)
    for (int c = 0; c < 2; ++c)
      d[2 * h + c] = D[(8 * h + g) * 8 + 2 * q + c];
  for (int s = 0; s < DMMA_K / 4; ++s) {
    for (int h = 0; h < DMMA_H; ++h)
      a[DMMA_H * s + h] = A[(8 * h + g) * DMMA_K + 4 * s + q];
    b[s] = B[(4 * s + q) * 8 + g];
  }
  dmma(CALL);
  for (int h = 0; h < DMMA_H; ++h)
    for (int c = 0; c < 2; ++c)
      D[(8 * h + g) * 8 + 2 * q + c] = d[2 * h + c];
}

extern "C" int dmma_test(const double *A, const double *B, double *D)
{
  double *a, *b, *d;
  cudaMalloc(&a, 16 * DMMA_K * sizeof(double));
  cudaMalloc(&b, 8 * DMMA_K * sizeof(double));
  cudaMalloc(&d, 128 * sizeof(double));
  cudaMemcpy(a, A, 8 * DMMA_H * DMMA_K * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(b, B, 8 * DMMA_K * sizeof(double), cudaMemcpyHostToDevice);
  cudaMemcpy(d, D, 64 * DMMA_H * sizeof(double), cudaMemcpyHostToDevice);
  dmma_kernel<<<1, 32>>>(a, b, d);
  cudaMemcpy(D, d, 64 * DMMA_H * sizeof(double), cudaMemcpyDeviceToHost);
  return (int)cudaDeviceSynchronize();
}
"""


def test_triangular_k_shape() -> None:
    # symm's two launches (k < i, then k > i) and trmm's (k > i) get the default shape with their edge
    # terms on the tensor cores, the k_tri shape without; gemm the default either way.
    for edge, shape in ((True, tile.DEFAULT_MMA), (False, tile.DEFAULT_MMA_K_TRI)):
        plans = {name: [p for p in _plans(name, tile.Options(mma_edge=edge)) if p.mma is not None]
                 for name in ("symm", "trmm", "gemm")}
        assert [p.k_tri for p in plans["symm"] + plans["trmm"]] == [True] * 3
        assert {p.mma for p in plans["symm"] + plans["trmm"]} == {shape}
        assert [(p.k_tri, p.mma) for p in plans["gemm"]] == [(False, tile.DEFAULT_MMA)]


@needs_gxx
@pytest.mark.parametrize("inst", tile.MMA_INSTRUCTIONS, ids=lambda i: f"m{i[0]}n8k{i[1]}")
def test_emulated_dmma_is_the_fragment_product(tmp_path: Path, inst: tuple[int, int]) -> None:
    from transpile.sim import build, run_isolated

    rows, k = inst
    out = _emit("gemm", tile.Options(mma_shape=(64, 64, 16, 32, 32, 2), mma_inst=inst))
    (lam,) = re.findall(r"^  const auto dmma = .*?^  };$", out, re.S | re.M)
    nd, na, nb = cuda_mma.Instruction(rows, k).counts
    call = ", ".join([f"d[{i}]" for i in range(nd)] + [f"a[{i}]" for i in range(na)] + [f"b[{i}]" for i in range(nb)])
    cu = tmp_path / "dmma.cu"
    cu.write_text(f"constexpr int DMMA_H = {rows // 8}, DMMA_K = {k};\n"
                  + _HARNESS.replace("LAMBDA", lam).replace("CALL", call))
    rng = np.random.default_rng(3)
    a, b, d = rng.standard_normal((rows, k)), rng.standard_normal((k, 8)), rng.standard_normal((rows, 8))
    res = d.ravel().copy()
    run = run_isolated(build(cu, tmp_path), "dmma_test", a.ravel().copy(), b.ravel().copy(), res)
    assert run.ok and run.ret == 0, run
    np.testing.assert_allclose(res.reshape(rows, 8), d + a @ b, rtol=1e-14, atol=1e-14)


# ---------------------------------------------------------------------------
# Builds and the simulation


@needs_nvcc
@pytest.mark.parametrize("name", sorted(MMA))
def test_ptxas_no_spills(tmp_path: Path, name: str) -> None:
    cu = tmp_path / f"{name}.cu"
    out = _emit(name)
    assert len(DMMA.findall(out)) == MMA[name]
    cu.write_text(out)
    r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", str(cu), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
    # NOTE: gemm and 2mm's first product spill 32-36 bytes under __launch_bounds__(256, 2), in the
    # accumulator load once per output tile (nvdisasm: no local memory access in the k loop).
    assert spills and all(int(s) <= 64 and int(t) <= 64 for s, t in spills), r.stderr


def _verify(name: str, sizes: dict[str, int], options: tile.Options | None = None) -> Report:
    path = KERNELS / f"{name}.c"
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    # A shape's test checks its tensor-core kernel alone (arch=90: no FMA kernel beside it, whose own
    # run in stage (c) tests/test_arches.py covers); the default output has both.
    out = cuda.emit(lowered, source=path.name, tiling=options if options is None else replace(options, arch=90))
    assert DMMA.search(out)
    (report,) = verify_module(module, out, source=path, lowered=lowered,
                              options=Options(seed=7, mode="full", sizes=sizes, stages="abc", gpu=False,
                                              sim_work=simstage.SMALL_WORK))
    assert report.ok, report.summary()
    assert report.stage("c").status == "pass", report.summary()
    return report


@needs_gxx
def test_gemm_matches_the_reference_off_the_tile_grid() -> None:
    # One verification: full mode's own shapes include 1x1x1, so a separate case that requested it ran
    # a prefix of this case's shapes (same seed, same inputs).
    report = _verify("gemm", {"ni": 67, "nj": 45, "nk": 33})
    tested = [s["sizes"] for s in report.shapes if s["stage"] == "c"]
    assert {"ni": 1, "nj": 1, "nk": 1} in tested and {"ni": 67, "nj": 45, "nk": 33} in tested, tested


@pytest.mark.sample(2)
@needs_gxx
@pytest.mark.parametrize("shape", [(16, 16, 8, 8, 8, 1), (16, 16, 8, 8, 8, 3), (128, 64, 16, 32, 32, 1),
                                   (64, 64, 8, 32, 32, 4)], ids=str)  # 128x128 (16 warps): timed on the H200 only
def test_gemm_shapes(shape: tuple[int, int, int, int, int, int]) -> None:
    _verify("gemm", {"ni": 137, "nj": 71, "nk": 45}, tile.Options(mma_shape=shape))


#: Small shapes (several blocks and warps at the test sizes): register prefetch, and a cp.async pipeline,
#: with 8-row warp tiles (m8n8k4) and with 16-row ones (the default m16n8k8; ``k16`` at a k step of 16).
SMALL = {"prefetch": (16, 16, 8, 8, 8, 1), "cp.async": (16, 16, 8, 8, 8, 3), "m16-prefetch": (32, 16, 8, 16, 8, 1),
         "m16-cp.async": (32, 16, 8, 16, 8, 3), "k16": (32, 16, 16, 16, 8, 2)}
_PREFETCH, _PIPELINED = ("prefetch", "m16-prefetch"), ("cp.async", "m16-cp.async", "k16")


def _two_shapes(cases: list[Any]) -> list[Any]:
    """Each case with two of the SMALL shapes, one of each staging path (register prefetch, a cp.async
    pipeline), rotating so that every shape meets several cases: the simulator's builds (a few
    seconds each) grow with cases x shapes, the paths' coverage does not need the full product."""
    out = []
    for n, case in enumerate(cases):
        for shape in (_PREFETCH[n % len(_PREFETCH)], _PIPELINED[n % len(_PIPELINED)]):
            out.append((*case, shape) if isinstance(case, tuple) else (case, shape))
    return out


@pytest.mark.sample(4)
@needs_gxx
@pytest.mark.parametrize("name, sizes, shape", _two_shapes([
    ("syrk", {"n": 37, "m": 21}), ("syr2k", {"n": 37, "m": 21}),
    ("covariance", {"n": 23, "m": 37}), ("correlation", {"n": 23, "m": 37}),
    ("2mm", {"ni": 19, "nj": 21, "nk": 13, "nl": 17}), ("3mm", {"ni": 19, "nj": 21, "nk": 13, "nl": 17, "nm": 11}),
    ("trmm", {"m": 37, "n": 21}), ("symm", {"m": 37, "n": 21}),
]))
def test_matches_the_reference(name: str, sizes: dict[str, int], shape: str) -> None:
    _verify(name, sizes, tile.Options(mma_shape=SMALL[shape], mma_inst=(16, 16) if shape == "k16" else tile.DEFAULT_MMA_INST))


def test_no_reassociate_and_no_mma_keep_the_fma_kernel() -> None:
    from click.testing import CliRunner

    from transpile.cli import main

    src = KERNELS / "gemm.c"
    for flag in ("--no-mma", "--no-reassociate"):
        r = CliRunner().invoke(main, ["compile", str(src), "-o", "-", "--no-verify", flag])
        assert r.exit_code == 0, r.output
        assert not DMMA.search(r.output) and "Block tiles of 64x64" in r.output


@needs_gxx
@pytest.mark.parametrize("name, sizes", [("syrk", {"n": 70, "m": 19}), ("covariance", {"n": 19, "m": 70})])
def test_triangular_default_shape_matches_the_reference(name: str, sizes: dict[str, int]) -> None:
    out = _emit(name)  # the triangular form takes tile.DEFAULT_MMA_TRIANGULAR
    assert "Block tiles of 64x64" in out and "pipeline over 4 shared buffers" in out
    _verify(name, sizes)


# ---------------------------------------------------------------------------
# Triangular k: the tensor cores take the k range common to a block's rows, each row's other terms
# are added one by one (lower edge, upper edge, or all of them when the rows share no k).

TRI_K = """kernel tri(i32 n, i32 p, in f64 a[RA][RB], in f64 b[p][n], inout f64 c[n][n]) {
  for i in 0..n {
    for j in 0..n {
      for k in LO..HI {
        c[i][j] += a[AI][AK] * b[k][j];
      }
    }
  }
}
"""
TRI_SHAPES = {  # k range -> a's extents and subscripts (b has p = n + 5 rows)
    "upper-edge": dict(LO="0", HI="i", RA="n", RB="p", AI="i", AK="k"),
    "lower-edge": dict(LO="i + 1", HI="p", RA="p", RB="n", AI="k", AK="i"),
    "no-common-k": dict(LO="i", HI="i + 5", RA="n", RB="p", AI="i", AK="k"),
}


def _tri_source(shape: str) -> str:
    src = TRI_K
    for key, value in TRI_SHAPES[shape].items():
        src = src.replace(key, value)
    return src


@pytest.mark.sample(3)
@needs_gxx
@pytest.mark.parametrize("shape, mma", _two_shapes(sorted(TRI_SHAPES)))
def test_triangular_k_matches_the_reference(tmp_path: Path, shape: str, mma: str) -> None:
    path = tmp_path / "tri.ir"
    path.write_text(_tri_source(shape))
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    out = cuda.emit(lowered, source=path.name, tiling=tile.Options(mma_shape=SMALL[mma]))
    assert len(DMMA.findall(out)) == 1 and "k range all of this block's rows take" in out
    for n in (1, 16, 37):  # one row, one row tile of 16, three of them (off the grid)
        (report,) = verify_module(module, out, source=path, lowered=lowered,
                                  options=Options(seed=7, mode="full", sizes={"n": n, "p": n + 5}, stages="abc",
                                                  gpu=False))
        assert report.ok and report.stage("c").status == "pass", (n, report.summary())



@needs_gxx
@pytest.mark.parametrize("shape", ["upper-edge", "lower-edge"])
def test_triangular_k_row_factor_not_zero_at_zero(tmp_path: Path, shape: str) -> None:
    """A row factor that is not zero where its operand is (``a + 0.5``): the edge steps must zero
    the factor outside each row's range, not only leave the staged element zero."""
    path = tmp_path / "tri.ir"
    path.write_text(_tri_source(shape).replace("a[AI][AK] * b[k][j]", "(a[AI][AK] + 0.5) * b[k][j]")
                    .replace("a[i][k] * b[k][j]", "(a[i][k] + 0.5) * b[k][j]")
                    .replace("a[k][i] * b[k][j]", "(a[k][i] + 0.5) * b[k][j]"))
    assert "+ 0.5" in path.read_text()
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    out = cuda.emit(lowered, source=path.name, tiling=tile.Options(mma_shape=SMALL["cp.async"]))
    assert len(DMMA.findall(out)) == 1 and "isfinite(" in out
    (report,) = verify_module(module, out, source=path, lowered=lowered,
                              options=Options(seed=5, mode="full", sizes={"n": 37, "p": 42}, stages="abc",
                                              gpu=False))
    assert report.ok and report.stage("c").status == "pass", report.summary()

@needs_gxx
def test_triangular_k_never_multiplies_outside_a_rows_range(tmp_path: Path) -> None:
    """b's rows that no output row's k range reaches hold inf and NaN: a zero-masked operand would
    turn them into NaN (0 * inf), a skipped term leaves the outputs finite and exact."""
    from transpile.sim.build import build
    from transpile.sim.runner import run_isolated

    path = tmp_path / "tri.ir"
    path.write_text(_tri_source("lower-edge"))  # row i takes k in i + 1..p: b[0] is never read
    module = frontend.load(path)
    out = cuda.emit(pipeline.lower(module), source=path.name, tiling=tile.Options(mma_shape=SMALL["cp.async"]))
    cu = tmp_path / "tri.cu"
    cu.write_text(out)
    n, p = 37, 42
    rng = np.random.default_rng(3)
    a = rng.standard_normal((p, n))
    b = rng.standard_normal((p, n))
    b[0, :] = np.inf
    b[0, ::2] = np.nan
    c = rng.standard_normal((n, n))
    want = c.copy()
    for i in range(n):
        for k in range(i + 1, p):
            want[i, :] += a[k, i] * b[k, :]
    run = run_isolated(build(cu, tmp_path), "tri", np.int32(n), np.int32(p), a, b, c)
    assert run.ok, run
    assert np.isfinite(c).all()
    np.testing.assert_allclose(c, want, rtol=1e-12, atol=1e-12)



#: Rows of b that some output rows' k ranges take and others' (in the same row tile) do not.
POISON = {"lower-edge": 5, "upper-edge": 20, "no-common-k": 9}


@needs_gxx
@pytest.mark.parametrize("shape", sorted(POISON))
@pytest.mark.parametrize("mma, edge", [("cp.async", True), ("m16-prefetch", True), ("k16", True),
                                       ("cp.async", False)])
def test_triangular_k_edge_terms_keep_non_finite_columns_to_their_rows(
        tmp_path: Path, shape: str, mma: str, edge: bool) -> None:
    """The edge steps put zeros in the row factors outside each row's range: with inf and NaN in a
    column factor that only some rows of a tile take, a warp must add that step's terms one by one,
    or the other rows turn NaN (0 * inf).  The outputs match the loop nest exactly in where they are
    finite, inf or NaN."""
    from transpile.sim.build import build
    from transpile.sim.runner import run_isolated

    path = tmp_path / "tri.ir"
    path.write_text(_tri_source(shape))
    module = frontend.load(path)
    out = cuda.emit(pipeline.lower(module), source=path.name,
                    tiling=tile.Options(mma_shape=SMALL[mma], mma_edge=edge))
    assert ("isfinite(" in out) == edge and len(DMMA.findall(out)) == 1
    cu = tmp_path / "tri.cu"
    cu.write_text(out)
    n, p = 37, 42
    ra, rb = TRI_SHAPES[shape]["RA"], TRI_SHAPES[shape]["RB"]
    dims = {"n": n, "p": p}
    rng = np.random.default_rng(11)
    a = rng.standard_normal((dims[ra], dims[rb]))
    b = rng.standard_normal((p, n))
    poison = POISON[shape]
    b[poison, :] = np.inf
    b[poison, ::3] = np.nan
    c = rng.standard_normal((n, n))
    lo = {"lower-edge": lambda i: i + 1, "upper-edge": lambda i: 0, "no-common-k": lambda i: i}[shape]
    hi = {"lower-edge": lambda i: p, "upper-edge": lambda i: i, "no-common-k": lambda i: i + 5}[shape]
    want = c.copy()
    for i in range(n):
        for k in range(lo(i), hi(i)):
            aik = a[k, i] if shape == "lower-edge" else a[i, k]
            want[i, :] += aik * b[k, :]
    takes = np.array([lo(i) <= poison < hi(i) for i in range(n)])
    assert takes.any() and not takes.all()  # the poisoned row splits the rows
    run = run_isolated(build(cu, tmp_path), "tri", np.int32(n), np.int32(p), a, b, c)
    assert run.ok, run
    assert np.isfinite(c[~takes]).all()
    np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(c), np.isinf(want))
    np.testing.assert_allclose(c, want, rtol=1e-12, atol=1e-12)

#: Scalar accumulators (symm's first launch): the accumulators start at t's init, the epilogue is
#: evaluated once per output; with a rectangular and with a triangular k.
SCALAR = """kernel sform(i32 n, i32 p, in f64 a[n][p], in f64 b[p][n], inout f64 c[n][n]) {
  for i in 0..n {
    for j in 0..n {
      f64 t = 0.5;
      for k in 0..HI {
        t += a[i][k] * b[k][j];
      }
      c[i][j] = 0.25 * c[i][j] + t * t + a[i][0] * b[0][j];
    }
  }
}
"""


@pytest.mark.sample(2)
@needs_gxx
@pytest.mark.parametrize("hi, mma", _two_shapes(["p", "i"]) + [("i", "k16")])
def test_scalar_accumulator_matches_the_reference(tmp_path: Path, hi: str, mma: str) -> None:
    path = tmp_path / "sform.ir"
    path.write_text(SCALAR.replace("HI", hi))
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    out = cuda.emit(lowered, source=path.name, tiling=tile.Options(mma_shape=SMALL[mma]))
    assert len(DMMA.findall(out)) == 1 and "scalar accumulator's initial value" in out
    for n in (1, 37):
        (report,) = verify_module(module, out, source=path, lowered=lowered,
                                  options=Options(seed=7, mode="full", sizes={"n": n, "p": n + 3}, stages="abc",
                                                  gpu=False))
        assert report.ok and report.stage("c").status == "pass", (n, report.summary())

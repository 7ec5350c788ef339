"""The tiled matmul path: passes/tile.py (plans), transpile/cuda/tiled.py (CUDA), the CLI options.

Plans are found for the matmul-like launches and refused for every other
shape; the emitted CUDA builds for sm_90 without spills; the verifier's CPU
simulation (stage c) matches the C reference bit for bit at sizes off the
tile grid; bad ``--tile``/``--coarsen`` values are clean usage errors.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from passes import tile
from transpile import cuda, frontend, ir, pipeline
from transpile.ir import text
from transpile.verify import Options, Report, simstage, verify_module

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"


HAVE_NVCC = shutil.which("nvcc") is not None
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")
needs_nvcc = pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not installed")

#: Kernel -> number of launches that get a plan (the others: none).
TILED = {"gemm": 1, "2mm": 2, "3mm": 3, "syrk": 1, "syr2k": 1, "covariance": 1, "correlation": 1, "trmm": 1,
         "symm": 2}  # symm: temp2 (a scalar accumulator), then C[k][j] += alpha * B[i][j] * A[i][k], i in k + 1..m
UNTILED = ["atax", "bicg", "doitgen", "gemver",
           "jacobi_2d", "heat_3d", "fdtd_2d", "lu", "mvt"]


def _launches(name: str) -> list[ir.Launch]:
    module = pipeline.lower(frontend.load(KERNELS / f"{name}.c"))
    return [s for k in module.kernels for s in ir.walk(k) if isinstance(s, ir.Launch)]


def _plans(name: str, options: tile.Options | None = None) -> list[tile.Plan]:
    return [p for p in (tile.plan(x, options) for x in _launches(name)) if p is not None]


# ---------------------------------------------------------------------------
# Plans


@pytest.mark.parametrize("name", sorted(TILED))
def test_plan_found_for_matmul_like_launches(name: str) -> None:
    plans = _plans(name)
    assert len(plans) == TILED[name]
    for p in plans:
        assert (p.bm, p.bn, p.bk, p.tm, p.tn, p.shared) == (64, 64, 16, 4, 4, True)
        assert p.threads == (16, 16)
        assert p.triangular == (name.startswith("syr") or name in ("covariance", "correlation"))
        assert p.mirror == (name in ("covariance", "correlation"))
        assert len(p.diag) == (name == "correlation")
        assert p.k_tri == (name in ("trmm", "symm"))
    assert [p.scalar is not None for p in plans] == ([True, False] if name == "symm" else [False] * len(plans))


@pytest.mark.parametrize("name", UNTILED)
def test_no_plan_for_other_shapes(name: str) -> None:
    assert _plans(name) == []


def test_gemm_plan_operands() -> None:
    (p,) = _plans("gemm")
    assert [(o.index.array, o.side, o.k_last) for o in p.operands] == [("A", "row", True), ("B", "col", False)]
    assert len(p.pre) == 1 and not p.post  # C[i][j] *= beta, fused before the k loop
    assert p.shared_bytes == 2 * 16 * 65 * 8


def test_bk_shrinks_to_fit_shared_memory() -> None:
    (p,) = _plans("gemm", tile.Options(tile=(256, 256), coarsen=(8, 8)))
    assert p.shared_bytes <= tile.SHARED_LIMIT and p.bk == 8


def test_disabled_and_invalid_options_give_no_plan() -> None:
    assert _plans("gemm", tile.Options(enabled=False)) == []
    assert _plans("gemm", tile.Options(coarsen=(3, 4))) == []


@pytest.mark.parametrize("tile_, coarsen, fragment", [
    ((64, 64), (3, 4), "not a multiple"),
    ((1024, 1024), (4, 4), "threads per block"),
    ((8, 8), (4, 4), "threads per block"),
    ((64, 64), (32, 2), "too large"),
    ((64, 64), (0, 4), "positive"),
])
def test_option_problems(tile_: tuple[int, int], coarsen: tuple[int, int], fragment: str) -> None:
    problem = tile.Options(tile=tile_, coarsen=coarsen).problem()
    assert problem is not None and fragment in problem


_HEAD = "kernel k(i32 n, f64 a, inout f64 C[n][n], in f64 A[n][n], in f64 B[n][n], in i32 P[n][n]) {\n"


def _one(body: str, loops: str = "for i in 0..n par(y) {\n for j in 0..n par(x) {\n") -> ir.Launch:
    k = text.parse_kernel(_HEAD + " launch {\n" + loops + body + "\n}\n}\n }\n}\n")
    (launch,) = [s for s in k.body if isinstance(s, ir.Launch)]
    return launch


def test_plan_accepts_a_hand_written_matmul() -> None:
    assert tile.plan(_one("for k in 0..n { C[i][j] += a * A[k][i] * B[j][k]; }")) is not None


@pytest.mark.parametrize("body", [
    "for k in 0..n { C[i][j] += A[i][k] * C[k][j]; }",  # another element of the output
    "for k in 0..n { C[i][j] += A[i][k] * B[k][k]; }",  # operand indexed by k only
    "for k in 0..n { C[i][j] += A[i][j] * B[k][j]; }",  # operand indexed by i and j
    "for k in 0..n { C[i][j] += A[i][k] * B[k][j] * f64(i); }",  # i outside subscripts
    "for k in 0..2 * i { C[i][j] += A[i][k] * B[k][j]; }",  # triangular k, not unit
    "for k in 0..n { C[i][j] += A[P[i][k]][k] * B[k][j]; }",  # indirect subscript
    "C[i][j] = A[i][j];\nfor k in 0..n { C[i][j] += A[i][k] * B[k][j]; }",  # pre statement reads another array
    "for k in 0..n { C[i][j] += A[i][k] * B[k][j]; }\nfor k in 0..n { C[i][j] += A[i][k]; }",  # two k loops
])
def test_plan_refuses(body: str) -> None:
    assert tile.plan(_one(body)) is None


def test_plan_accepts_a_triangular_k() -> None:
    for body in ("for k in 0..i { C[i][j] += A[i][k] * B[k][j]; }",
                 "for k in i + 1..n { C[i][j] += A[k][i] * B[k][j]; }"):
        p = tile.plan(_one(body))
        assert p is not None and p.k_tri and p.mma is not None, body  # tensor cores on the common k range
        p = tile.plan(_one(body), tile.Options(mma=False))
        assert p is not None and p.k_tri and p.mma is None, body
    p = tile.plan(_one("for k in 0..n { C[i][j] += A[i][k] * B[k][j]; }"))
    assert p is not None and not p.k_tri and p.mma is not None
    # Only in the rectangular form: a triangular j loop's k bounds still may not read i.
    assert tile.plan(_one("for k in 0..i { C[i][j] += A[i][k] * B[j][k]; }",
                          "for i in 0..n par(x) {\n for j in 0..i + 1 {\n")) is None


def test_plan_accepts_a_scalar_accumulator_with_an_epilogue() -> None:
    body = "f64 t = 0.0;\nfor k in 0..n { t += A[i][k] * B[k][j]; }\nC[i][j] = 0.5 * C[i][j] + a * B[i][j] * t;"
    p = tile.plan(_one(body))
    assert p is not None and p.scalar is not None and p.epilogue is not None and p.mma is not None
    assert p.output == p.epilogue.target and not p.pre and not p.post


@pytest.mark.parametrize("body", [
    "f64 t = 0.0;\nfor k in 0..n { t += A[i][k] * C[k][j]; }\nC[i][j] = t;",  # f reads the output
    "f64 t = 0.0;\nfor k in 0..n { t += A[i][k] * B[k][j]; }\nC[i][j] = C[j][i] + t;",  # another output element
    "f64 t = 0.0;\nfor k in 0..n { t += A[i][k] * B[k][j]; }\nC[i][j] = t + f64(i);",  # i outside subscripts
    "f64 t = A[i][0];\nfor k in 0..n { t += A[i][k] * B[k][j]; }\nC[i][j] = t;",  # init reads an array
    "f64 t = 0.0;\nfor k in 0..n { t += A[i][k] * B[k][j]; }\nC[i][j] = t;\nC[i][j] += t;",  # two statements after
    "f64 t = 0.0;\nfor k in 0..n { t += A[i][k] * B[k][j]; }\nC[i][j] = B[P[i][j]][j] + t;",  # indirect
])
def test_plan_refuses_scalar_forms(body: str) -> None:
    assert tile.plan(_one(body)) is None


def test_plan_refuses_non_unit_triangular_bounds() -> None:
    loops = "for i in 0..n par(x) {\n for j in 0..2 * i {\n"
    assert tile.plan(_one("for k in 0..n { C[i][j] += A[i][k] * B[j][k]; }", loops)) is None
    loops = "for i in 0..n par(x) {\n for j in i..n {\n"
    assert tile.plan(_one("for k in 0..n { C[i][j] += A[i][k] * B[j][k]; }", loops)) is not None


def test_mirror_store_needs_j_at_least_i() -> None:
    body = "for k in 0..n { C[i][j] += A[k][i] * A[k][j]; }\nC[j][i] = C[i][j];"
    p = tile.plan(_one(body, "for i in 0..n par(x) {\n for j in i..n {\n"))
    assert p is not None and p.mirror
    assert tile.plan(_one(body, "for i in 0..n par(x) {\n for j in 0..i + 1 {\n")) is None
    assert tile.plan(_one(body)) is None  # rectangular: C[j][i] is another instance's output


def test_diagonal_statement_needs_j_above_i() -> None:
    body = "for k in 0..n { C[i][j] += A[k][i] * A[k][j]; }\nC[j][i] = C[i][j];"
    p = tile.plan(_one(body, "for i in 0..n par(x) {\n C[i][i] = 1.0;\n for j in i + 1..n {\n"))
    assert p is not None and len(p.diag) == 1
    assert tile.plan(_one(body, "for i in 0..n par(x) {\n C[i][i] = 1.0;\n for j in i..n {\n")) is None
    assert tile.plan(_one(body, "for i in 0..n par(x) {\n C[i][0] = 1.0;\n for j in i + 1..n {\n")) is None


# ---------------------------------------------------------------------------
# Emitted CUDA


#: The FMA kernel this file tests (the fp64 tensor-core path has its own tests: test_mma.py).
FMA = tile.Options(mma=False)


def _emit(name: str, options: tile.Options | None = FMA) -> str:
    module = pipeline.lower(frontend.load(KERNELS / f"{name}.c"))
    return cuda.emit(module, source=f"{name}.c", tiling=options)


def test_emitted_kernel_has_the_plan_shape() -> None:
    out = _emit("gemm")
    assert "__shared__ __align__(16) double sA0[16][65];" in out
    assert "__launch_bounds__(256)" in out and "const double *__restrict__ A" in out
    assert "dim3(16u, 16u, 1u)" in out and "transpile_grid(j_n, 64u, 2147483647u)" in out
    assert out.count("__syncthreads();") == 2
    assert "__shared__" not in _emit("gemm", tile.Options(shared=False))
    assert "Block tiles" not in _emit("gemm", tile.Options(enabled=False))


OPTION_SETS = {"default": FMA, "no-shared": tile.Options(shared=False),
               "32x64-2x4": tile.Options(tile=(32, 64), coarsen=(2, 4), mma=False),
               "128x64-8x4": tile.Options(tile=(128, 64), coarsen=(8, 4), mma=False)}


@pytest.mark.sample(3)
@needs_nvcc
@pytest.mark.parametrize("name", sorted(TILED))
@pytest.mark.parametrize("opts", sorted(OPTION_SETS))
def test_ptxas_reports_no_spills(tmp_path: Path, name: str, opts: str) -> None:
    cu = tmp_path / f"{name}.cu"
    cu.write_text(_emit(name, OPTION_SETS[opts]))
    r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", str(cu), "-o", str(tmp_path / "k.cubin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", r.stderr)
    stacks = re.findall(r"(\d+) bytes stack frame", r.stderr)
    assert spills and all(s == ("0", "0") for s in spills), r.stderr
    assert all(s == "0" for s in stacks), r.stderr


def _verify(name: str, options: tile.Options | None, sizes: dict[str, int], mode: str = "full") -> Report:
    path = KERNELS / f"{name}.c"
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    out = cuda.emit(lowered, source=path.name, tiling=options or FMA)
    assert "Block tiles" in out
    (report,) = verify_module(module, out, source=path, lowered=lowered,
                              options=Options(seed=7, mode=mode, sizes=sizes, stages="abc", gpu=False,
                                              sim_work=simstage.SMALL_WORK))
    assert report.ok, report.summary()
    assert report.stage("c").status == "pass", report.summary()
    return report


@needs_gxx
def test_gemm_matches_the_reference_off_the_tile_grid() -> None:
    # One verification: full mode's own shapes include 1x1x1 and 65x65x65 (within SMALL_WORK), so the
    # separate cases that requested them ran a prefix of this case's shapes (same seed, same inputs).
    report = _verify("gemm", None, {"ni": 17, "nj": 33, "nk": 65})
    tested = [s["sizes"] for s in report.shapes if s["stage"] == "c"]
    for n in (1, 65):
        assert {"ni": n, "nj": n, "nk": n} in tested, tested
    assert {"ni": 17, "nj": 33, "nk": 65} in tested, tested


@pytest.mark.sample(3)
@needs_gxx
@pytest.mark.parametrize("opts", ["no-shared", "32x64-2x4", "128x64-8x4"])
def test_gemm_options_match_the_reference(opts: str) -> None:
    _verify("gemm", OPTION_SETS[opts], {"ni": 33, "nj": 70, "nk": 19})


@pytest.mark.sample(2)
@needs_gxx
@pytest.mark.parametrize("name", ["2mm", "3mm", "syrk", "syr2k", "covariance", "correlation", "trmm", "symm"])
def test_other_kernels_match_the_reference(name: str) -> None:
    _verify(name, None, {}, mode="quick")


#: A triangular k whose update is not bilinear: a row that took a term outside its own k range
#: would add 1.0 even with a zero operand, so the per-row guard is what keeps it exact.
K_TRIANGULAR = """kernel ktri(i32 n, i32 p, in f64 a[p][n], in f64 b[p][n], inout f64 c[n][n]) {
  for i in 0..n {
    for j in 0..n {
      for k in i + 1..p {
        c[i][j] += a[k][i] * b[k][j] + 1.0;
      }
    }
  }
}
"""


#: A scalar accumulator with an epilogue that is not a plain store (symm's shape, rectangular k).
SCALAR_FORM = """kernel sform(i32 n, i32 p, in f64 a[n][p], in f64 b[p][n], inout f64 c[n][n]) {
  for i in 0..n {
    for j in 0..n {
      f64 t = 0.5;
      for k in 0..p {
        t += a[i][k] * b[k][j];
      }
      c[i][j] = 0.25 * c[i][j] + t * t + a[i][0] * b[0][j];
    }
  }
}
"""


@pytest.mark.sample(2)
@needs_gxx
@pytest.mark.parametrize("opts", ["default", "no-shared", "32x64-2x4"])
@pytest.mark.parametrize("src", [K_TRIANGULAR, SCALAR_FORM], ids=["k-triangular", "scalar-form"])
def test_extended_forms_match_the_interpreter(tmp_path: Path, opts: str, src: str) -> None:
    path = tmp_path / "k.ir"
    path.write_text(src)
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    out = cuda.emit(lowered, source=path.name, tiling=OPTION_SETS[opts])
    assert "Block tiles" in out and ("k range" in out) == (src is K_TRIANGULAR)
    (report,) = verify_module(module, out, source=path, lowered=lowered,
                              options=Options(seed=7, mode="full", sizes={}, stages="abc", gpu=False))
    assert report.ok and report.stage("c").status == "pass", report.summary()


@needs_gxx
@pytest.mark.parametrize("opts", ["no-shared", "32x64-2x4"])
def test_syrk_options_match_the_reference(opts: str) -> None:
    _verify("syrk", OPTION_SETS[opts], {"n": 70, "m": 19})


# ---------------------------------------------------------------------------
# Command line


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "transpile.cli", *args], capture_output=True, text=True,
                          env={**__import__("os").environ, "TRANSPILE_VERIFY_GPU": "0"})


@pytest.mark.parametrize("args", [("--tile", "64"), ("--tile", "axb"), ("--tile", "0x4"),
                                  ("--coarsen", "3x4"), ("--tile", "1024x1024"), ("--coarsen", "-1x4")])
def test_bad_tile_options_are_clean_errors(tmp_path: Path, args: tuple[str, ...]) -> None:
    r = _cli("compile", str(KERNELS / "gemm.c"), "-o", str(tmp_path / "g.cu"), "--no-verify", *args)
    assert r.returncode != 0
    assert "Error: Invalid value for" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "g.cu").exists()


def test_tile_options_reach_the_emitter(tmp_path: Path) -> None:
    out = tmp_path / "g.cu"
    r = _cli("compile", str(KERNELS / "gemm.c"), "-o", str(out), "--no-verify", "--tile", "32x64", "--coarsen",
             "2x4", "--no-shared")
    assert r.returncode == 0, r.stderr
    text_ = out.read_text()
    assert "Block tiles of 32x64" in text_ and "dim3(16u, 16u, 1u)" in text_ and "__shared__" not in text_

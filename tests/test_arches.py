"""One output for every architecture (transpile/cuda/arches.py, docs/architectures.md).

The default output builds for sm_75 ... sm_120: the tensor-core kernels' bodies
are compiled only for sm_80/sm_90 and later, each comes with the FMA kernel of
its plan, and the host picks between them by the kernel's PTX version (or
``TRANSPILE_MMA=0``); ``--arch sm_XX`` narrows the output to one target; the
verifier's stage (b) compiles architecture-dependent files for sm_75 and sm_80
too and stage (c) runs the FMA kernels (run M).  The slow test compiles the
default output of the 30 PolyBench kernels, the examples and float variants as
one fat binary of the seven architectures.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from passes import tile
from transpile import cuda, frontend, pipeline
from transpile.cli import main
from transpile.cuda import arches
from transpile.verify import Options, simstage, verify_module
from transpile.verify.reference import cache_dir

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"
EXAMPLES = ROOT / "examples"
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")
DMMA = re.compile(r"mma\.sync\.aligned\.m\d+n8k\d+\.row\.col\.f64")
GUARD = "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900"


def _emit(name: str, options: tile.Options | None = None) -> str:
    module = frontend.load(KERNELS / f"{name}.c")
    return cuda.emit(pipeline.lower(module), source=f"{name}.c", tiling=options)


def _compile(cu: Path, archs: tuple[int, ...], *, device_only: bool = False) -> subprocess.CompletedProcess[str]:
    """nvcc on ``cu`` for ``archs``: an object file, or with ``device_only`` the fat binary alone (every
    architecture's device code through cicc and ptxas, without the host compile: 7.2 s against 8.9 s
    for 2mm's seven targets)."""
    assert NVCC is not None
    out = ["-fatbin", "-o", str(cu.with_suffix(".fatbin"))] if device_only else ["-c", "-o", str(cu.with_suffix(".o"))]
    return subprocess.run([NVCC, *arches.gencode(archs), *out, str(cu)], capture_output=True, text=True,
                          timeout=600)


def test_tensor_core_kernels_come_with_their_fma_kernels() -> None:
    out = _emit("gemm")
    assert len(DMMA.findall(out)) == 1 and out.count(GUARD) == 1 and "__trap();" in out
    assert "__global__ void __launch_bounds__(256) kernel_gemm_kernel0_fma(" in out
    assert "if (transpile_mma_ok((const void *)kernel_gemm_kernel0, 90)) {" in out
    assert "kernel_gemm_kernel0_fma<<<" in out and 'getenv("TRANSPILE_MMA")' in out
    # The FMA kernel is the one --no-mma gives (its body, under another name).
    fma = _emit("gemm", tile.Options(mma=False))
    body = fma[fma.index("kernel_gemm_kernel0("):]
    body = body[body.index("{"):body.index("\n}\n")]
    assert body in out[out.index("kernel_gemm_kernel0_fma("):]
    # Files without tensor cores are unchanged: no switch, no helper.
    assert "transpile_mma_ok" not in _emit("jacobi_2d")


def test_arch_narrows_the_output_to_one_target() -> None:
    src = str(KERNELS / "gemm.c")
    r = CliRunner().invoke(main, ["compile", src, "-o", "-", "--no-verify", "--arch", "sm_80"])
    assert r.exit_code == 0, r.output
    assert not DMMA.search(r.output) and "kernel0_fma" not in r.output and "transpile_mma_ok" not in r.output
    r = CliRunner().invoke(main, ["compile", src, "-o", "-", "--no-verify", "--arch", "sm_90"])
    assert r.exit_code == 0, r.output
    assert DMMA.search(r.output) and "kernel0_fma" not in r.output and "transpile_mma_ok" not in r.output
    r = CliRunner().invoke(main, ["compile", src, "-o", "-", "--no-verify", "--arch", "sm_42"])
    assert r.exit_code == 2 and "sm_75" in r.output and "sm_120" in r.output, r.output
    # m8n8k4 needs sm_80 only: --arch sm_86 keeps the tensor cores with it.
    out = _emit("gemm", tile.Options(mma_inst=(8, 4), mma_shape=(64, 64, 16, 8, 32, 2), arch=86))
    assert DMMA.search(out) and "__CUDA_ARCH__ >= 800" in out and "kernel0_fma" not in out
    assert [arches.parse(v) for v in ("sm_80", "80", "compute_90", "sm_120")] == [80, 80, 90, 120]


@needs_nvcc
def test_default_output_builds_for_sm75_and_sm80(tmp_path: Path) -> None:
    cu = tmp_path / "gemm.cu"
    cu.write_text(_emit("gemm"))
    r = _compile(cu, (75, 80))
    assert r.returncode == 0, r.stderr[-2000:]


@needs_nvcc
def test_stage_b_compiles_older_architectures(tmp_path: Path) -> None:
    from transpile.verify import stages

    assert NVCC is not None
    body = 'asm volatile("cp.async.commit_group;" ::: "memory");'
    bare = tmp_path / "bare.cu"
    bare.write_text(f"__global__ void k() {{ {body} }}\n")
    msg = stages._older_arches(NVCC, bare, bare.read_bytes(), "t1")
    assert msg is not None and "cp.async" in msg and "sm_75" in msg, msg
    guarded = tmp_path / "guarded.cu"
    guarded.write_text(f"__global__ void k() {{\n#if __CUDA_ARCH__ >= 800\n  {body}\n#endif\n}}\n")
    assert stages._older_arches(NVCC, guarded, guarded.read_bytes(), "t2") is None
    plain = tmp_path / "plain.cu"
    plain.write_text("__global__ void k(double *x) { x[0] = 1.0; }\n")
    assert not arches.arch_dependent(plain.read_text())


@needs_gxx
def test_stage_c_runs_the_fma_kernels() -> None:
    """A wrong FMA kernel beside a right tensor-core one is caught by run M (TRANSPILE_MMA=0)."""
    path = KERNELS / "gemm.c"
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    out = cuda.emit(lowered, source=path.name)
    store = "C[(long long)i * nj + j] = acc[m][n];"
    at = out.index(store, out.index("kernel_gemm_kernel0_fma("))
    bad = out[:at] + "C[(long long)i * nj + j] = acc[m][n] * 1.0000001;" + out[at + len(store):]
    opts = Options(seed=3, mode="quick", sizes={"ni": 19, "nj": 21, "nk": 13}, stages="abc", gpu=False,
                   sim_work=simstage.SMALL_WORK)
    (report,) = verify_module(module, bad, source=path, lowered=lowered, options=opts)
    assert not report.ok and "TRANSPILE_MMA=0" in report.stage("c").message, report.summary()
    # The right file passes with run M: tests/test_mma.py verifies gemm's default output.


def _float_variant(name: str) -> str:
    return (KERNELS / f"{name}.c").read_text().replace("double", "float")


#: The default output of these compiles as one fat binary of every architecture.
FILES = [*(("kernel", p.stem) for p in sorted(KERNELS.glob("*.c"))),
         *(("example", p.stem) for p in sorted(EXAMPLES.glob("*.c"))),
         *(("float", n) for n in ("gemm", "syrk", "jacobi_2d", "atax", "covariance"))]


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("kind, name", FILES, ids=[f"{k}-{n}" for k, n in FILES])
def test_default_output_builds_for_every_architecture(tmp_path: Path, kind: str, name: str) -> None:
    """Every file's device code for the seven targets (issue 41's CI acceptance) where it depends on the
    architecture, for the oldest and newest otherwise; every 8th file (and all with TRANSPILE_TESTS=all)
    as the whole object, host code included."""
    whole = FILES.index((kind, name)) % 8 == 0 or os.environ.get("TRANSPILE_TESTS") == "all"
    if kind == "example":
        module = frontend.load(EXAMPLES / f"{name}.c")
    elif kind == "float":
        (tmp_path / f"{name}_f32.c").write_text(_float_variant(name))
        module = frontend.load(tmp_path / f"{name}_f32.c")
    else:
        module = frontend.load(KERNELS / f"{name}.c")
    cu = tmp_path / f"{name}.cu"
    text = cuda.emit(pipeline.lower(module), source=f"{name}.c")
    cu.write_text(text)
    # A text another case of this run built with the same flags is not built again (examples/gemm.c's
    # default output is tests/kernels/gemm.c's, byte for byte), as the verifier's nvcc cache does.
    done = cache_dir("arches") / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}-{'whole' if whole else 'device'}.ok"
    if done.exists():
        return
    # A file without architecture-dependent code (no asm, no __CUDA_ARCH__: arches.arch_dependent) is the
    # same device code for every target: its oldest and newest SASS (and the newest PTX) stand for the
    # seven (TRANSPILE_TESTS=all compiles all seven); a dependent file compiles for every target.
    every = arches.arch_dependent(text) or os.environ.get("TRANSPILE_TESTS") == "all"
    r = _compile(cu, arches.ARCHES if every else (arches.ARCHES[0], arches.ARCHES[-1]), device_only=not whole)
    assert r.returncode == 0, r.stderr[-2000:]
    done.touch()

"""A kernel named like a function that nvcc's implicit headers declare with C linkage (``norm``,
``sinpi``, ``cudaMalloc`` ...) is refused at the function with a located error: its drop-in keeps
the name with C linkage, which nvcc rejects (it was a stage (b) "verification failed", blaming the
generated CUDA).  tests/bad/cuda_c_name.c runs the same through the CLI's clean-failure test."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from transpile import cuda, pipeline
from transpile.cuda import names as cuda_names
from transpile.diagnostics import TranspileError
from transpile.ir import text

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_list_is_what_this_nvcc_refuses() -> None:
    # Refresh with: python -m transpile.cuda.names > transpile/cuda/names.txt
    assert cuda_names.probe() == cuda_names.NAMES
    assert cuda_names.probe(names={"norm", "sinpi", "clock64", "kernel_norm", "gemm"}) == {"norm", "sinpi", "clock64"}


@pytest.mark.parametrize("name", ["norm", "rnorm3d", "cudaMalloc"])
def test_an_ir_kernel_of_such_a_name_is_refused_at_the_kernel(name: str) -> None:
    module = text.parse(f"kernel {name}(i32 n, in f64 x[n], out f64 y[n]) {{\n"
                        "  for i in 0..n {\n    y[i] = x[i];\n  }\n}\n", filename="k.ir")
    with pytest.raises(TranspileError) as info:
        cuda.emit(pipeline.lower(module), source="k.ir")
    assert info.value.loc is not None and (info.value.loc.line, info.value.loc.col) == (1, 1)
    assert f"'{name}' is also the name of a function that the CUDA headers declare with C linkage" in info.value.msg


def test_other_names_and_helpers_of_such_names_compile(tmp_path: Path) -> None:
    src = tmp_path / "hn.c"
    src.write_text("static double rnorm(double v) { return v * 0.5; }\n"
                   "void norm_all(int n, double a[n]) {\n  for (int i = 0; i < n; i++) a[i] = rnorm(a[i]);\n}\n")
    out = tmp_path / "hn.cu"
    proc = subprocess.run([sys.executable, "-m", "transpile.cli", str(src), "-o", str(out), "--no-verify"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert 'extern "C" void norm_all(' in out.read_text()


def test_the_cli_shows_the_function_line() -> None:
    bad = ROOT / "tests" / "bad" / "cuda_c_name.c"
    proc = subprocess.run([sys.executable, "-m", "transpile.cli", str(bad), "-o", "-"], capture_output=True, text=True)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"{bad}:4:6: error: 'norm' is also the name") and lines[1].startswith("void norm(")

"""``--header FILE`` and the drop-in's C signature as written (transpile/frontend/header.py, docs/header.md)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from pycparser import c_parser

from transpile.cli import main
from transpile.frontend import header

NVCC = shutil.which("nvcc")
GCC = shutil.which("gcc")

SOURCE = """\
#include <stddef.h>
#include <stdint.h>
typedef long idx_t;
typedef double real;
void axpy(size_t n, const idx_t m, real a, const real *restrict x, real *restrict y, int64_t k,
          float w[n], const double *const z) {
  for (size_t i = 0; i < n; i++) y[i] += a * x[i] + m + k + w[i] + z[i];
}
"""
#: The user's prototype as a C++ unit declares it (C++ spells restrict __restrict__).
CXX_PROTOTYPE = ('extern "C" void axpy(size_t n, const idx_t m, real a, const real *__restrict__ x, '
                 "real *__restrict__ y, int64_t k, float *w, const double *const z);")


@pytest.mark.parametrize("decl, want", [
    ("size_t n", "size_t"), ("const idx_t m", "const long"), ("real a", "double"),
    ("const real *restrict x", "const double *__restrict__"), ("float w[10]", "float *"),
    ("double v[restrict 4]", "double *__restrict__"), ("const double *const z", "const double *const"),
    ("unsigned long u", "unsigned long"), ("int64_t k", "int64_t"), ("double A[3][4]", None),
    ("double **pp", None), ("struct s *p", None), ("_Bool b", "bool"), ("const unsigned char *c", "const unsigned char *"),
])
def test_spelling(decl: str, want: str | None) -> None:
    src = ("typedef unsigned long size_t; typedef long int64_t; typedef long idx_t; typedef double real; "
           f"struct s {{ int a; }}; void f({decl});")
    ast = c_parser.CParser().parse(src)
    typedefs = {e.name: e.type for e in ast.ext if type(e).__name__ == "Typedef"}
    (param,) = ast.ext[-1].type.args.params
    assert header.spelling(param.type, typedefs) == want


def _compile(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "axpy.c"
    src.write_text(SOURCE)
    cu, h = tmp_path / "axpy.cu", tmp_path / "axpy.h"
    r = CliRunner().invoke(main, ["compile", str(src), "-o", str(cu), "--no-verify", "--header", str(h)])
    assert r.exit_code == 0, r.output
    return cu, h


def test_header_holds_the_prototypes(tmp_path: Path) -> None:
    cu, h = _compile(tmp_path)
    text = h.read_text()
    assert ("void axpy(size_t n, const long m, double a, const double *__restrict__ x, double *__restrict__ y, "
            "int64_t k, float *w, const double *const z);") in text
    assert "cudaError_t axpy_device(" in text and "void axpy_release(void);" in text
    # NAME, NAME_device, NAME_release and the host path's choice NAME_on_host: every extern "C" function
    assert text.count(";") == 4 and "int axpy_on_host(" in text
    assert 'extern "C" {' in text and "#ifndef AXPY_H" in text
    assert 'extern "C" void axpy(size_t n, const long m,' in cu.read_text()  # the definition, as declared
    r = CliRunner().invoke(main, ["compile", str(tmp_path / "axpy.c"), "--emit", "ir", "-o", "-",
                                  "--header", str(tmp_path / "x.h")])
    assert r.exit_code == 1 and "--header" in r.output and not (tmp_path / "x.h").exists()


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
def test_cxx_unit_with_the_users_prototype_compiles(tmp_path: Path) -> None:
    _compile(tmp_path)
    unit = tmp_path / "unit.cu"
    unit.write_text("#include <stddef.h>\n#include <stdint.h>\ntypedef long idx_t;\ntypedef double real;\n"
                    f'{CXX_PROTOTYPE}\n#include "axpy.h"\n#include "axpy.cu"\n')
    assert NVCC is not None
    r = subprocess.run([NVCC, "-arch=sm_80", "-c", str(unit), "-o", str(tmp_path / "unit.o")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.skipif(NVCC is None or GCC is None, reason="nvcc and gcc needed")
def test_c_unit_includes_the_header(tmp_path: Path) -> None:
    _compile(tmp_path)
    use = tmp_path / "use.c"
    use.write_text('#include "axpy.h"\ntypedef long idx_t;\n'
                   "void axpy(size_t n, const idx_t m, double a, const double *restrict x, double *restrict y, "
                   "int64_t k, float w[n], const double *const z);\n"
                   "int main(void) { axpy_release(); return 0; }\n")
    assert NVCC is not None and GCC is not None
    homes = [os.environ.get("CUDA_HOME", ""), "/usr/local/cuda", str(Path(NVCC).resolve().parent.parent)]
    include = next((Path(h) / "include" for h in homes if h and (Path(h) / "include" / "cuda_runtime_api.h").exists()),
                   None)
    if include is None:
        pytest.skip("no CUDA include directory found")
    r = subprocess.run([GCC, "-std=c99", f"-I{include}", "-c", str(use), "-o",
                        str(tmp_path / "use.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

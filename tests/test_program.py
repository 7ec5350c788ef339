"""``--emit program`` (issue 41, item 3; transpile/cuda/program.py): one .cu holding the whole C
program, which ``nvcc prog.cu -o prog`` builds and whose ``main`` gives what the C program gives.

Each program is built twice here, without a GPU: by nvcc (``-arch=sm_80``, compiled and linked) and by
the verifier's simulator (its ``main`` run in a process of its own, kernels on the CPU), whose output is
compared with the C program's built by gcc.  The real PolyBench/C programs (``../shared/side_by_side``,
skipped when absent) are compiled with their utility file as PolyBench's users build them."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from transpile import sim
from transpile.cuda import program

ROOT = Path(__file__).resolve().parent.parent
PB = next((c for c in (ROOT.parent / "shared" / "side_by_side" / "polybench",)
           if (c / "utilities" / "polybench.c").is_file()), None)
NVCC = shutil.which("nvcc")


def transpile(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "transpile.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


_MAIN = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
args = [a.encode() for a in sys.argv[2:]]
argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
rc = lib.main(len(args), argv)
ctypes.CDLL(None).fflush(None)
sys.stdout.flush()
import os
os._exit(rc)
"""


def run_simulated(cu: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``main`` of the program file ``cu`` with ``args``, its kernels run by the simulator."""
    cuda, _ = program.split(cu.read_text())
    build = sim.build(cu, out, modelled=cuda)
    return subprocess.run([sys.executable, "-c", _MAIN, str(build.library), cu.stem, *args], capture_output=True,
                          text=True, timeout=600)


def run_gcc(sources: list[Path], out: Path, flags: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    exe = out / "ref"
    subprocess.run(["gcc", "-O2", "-std=gnu99", *flags, *map(str, sources), "-lm", "-o", str(exe)], check=True)
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=600)


def nvcc_builds(cu: Path, out: Path) -> None:
    if NVCC is None:
        return
    r = subprocess.run([NVCC, "-arch=sm_80", str(cu), "-o", str(out / "prog")], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    # the program's own lines may get warnings (durbin's main has an unused variable); ours none
    assert not re.search(rf"{re.escape(cu.name)}\(\d+\): warning", r.stderr), r.stderr[-3000:]


REAL = [("linear-algebra/kernels/2mm/2mm.c", "kernel_2mm"), ("stencils/jacobi-2d/jacobi-2d.c", "kernel_jacobi_2d"),
        ("linear-algebra/solvers/durbin/durbin.c", "kernel_durbin")]


@pytest.mark.slow
@pytest.mark.skipif(PB is None, reason="../shared/side_by_side/polybench is absent")
@pytest.mark.parametrize(("rel", "function"), REAL, ids=[Path(r).stem for r, _ in REAL])
def test_polybench_program(tmp_path: Path, rel: str, function: str) -> None:
    """A real PolyBench program and utilities/polybench.c in one .cu: nvcc builds it, and its array
    dump is the C program's (:func:`same_dump`)."""
    assert PB is not None
    src, util = PB / rel, PB / "utilities"
    flags = ["-I", str(util), "-D", "SMALL_DATASET", "-D", "POLYBENCH_DUMP_ARRAYS"]
    cu = tmp_path / f"{src.stem}.cu"
    r = transpile("--emit", "program", str(src), str(util / "polybench.c"), *flags, "--function", function,
                  "--no-verify", "-o", str(cu))
    assert r.returncode == 0, r.stderr
    text = cu.read_text()
    assert f"#define {function} transpile_gpu_{function}\n" in text
    assert f'#line 1 "{os.path.normpath(util / "polybench.c")}"' in text  # messages name the user's files
    assert "#include \"polybench.h\"" not in text  # put in place: nvcc is not given the -I
    nvcc_builds(cu, tmp_path)
    ran = run_simulated(cu, tmp_path / "sim")
    ref = run_gcc([src, util / "polybench.c"], tmp_path, flags)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert "begin dump" in ref.stderr
    same_dump(ran.stderr, ref.stderr)


def same_dump(got: str, want: str) -> None:
    """PolyBench dumps (``%0.2lf`` numbers between the arrays' names) equal but for the last printed
    digit: the GPU sums in another order (2mm's 530.175 printed 530.18 by one build, 530.17 by the
    other), within |x - ref| <= 1e-6 max|ref| + 0.0100001, the side-by-side harness's tolerance."""
    a, b = got.split(), want.split()
    assert len(a) == len(b), (len(a), len(b))
    nums = [(float(x), float(y)) for x, y in zip(a, b) if _number(y)]
    assert [x for x in a if not _number(x)] == [y for y in b if not _number(y)]
    scale = max((abs(y) for _, y in nums), default=0.0)
    bad = [(x, y) for x, y in nums if abs(x - y) > 1e-6 * scale + 0.0100001]
    assert not bad, bad[:5]


def _number(t: str) -> bool:
    try:
        float(t)
    except ValueError:
        return False
    return True


SAXPY = r"""
#include <stdio.h>
#include <stdlib.h>
#include "vec.h"
#include <vec.h>

void saxpy(int n, real a, const real *restrict x, real *restrict y)
{
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i];
}

double dot(int n, const real *x, const real *y)
{
  double s = 0;
  for (int i = 0; i < n; i++)
    s += (double)x[i] * y[i];
  return s;
}

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  real *x = malloc(n * sizeof *x), *y;
  y = argc > 2 ? NULL : calloc(n, sizeof(real));
  for (int i = 0; i < n; i++) { x[i] = i % 7; y[i] = 1; }
  saxpy(n, 2.0f, x, y);
  printf("%d %.1f\n", n, dot(n, x, y));
  free(x); free(y);
  return 0;
}
"""


def test_void_pointers_get_their_casts(tmp_path: Path) -> None:
    """C's implicit ``void *`` conversions (malloc, calloc, in a declaration, in a conditional
    assignment) get the casts C++ needs; two offloaded functions, one returning a value; a header
    with ``#pragma once`` included twice, through quotes and through ``-I``."""
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "vec.h").write_text("#pragma once\ntypedef float real;\n")
    src = tmp_path / "vec.c"
    src.write_text(SAXPY)
    (tmp_path / "vec.h").symlink_to(inc / "vec.h")
    cu = tmp_path / "vec.cu"
    r = transpile("--emit", "program", str(src), "-I", str(inc), "--no-verify", "-o", str(cu))
    assert r.returncode == 0, r.stderr
    text = cu.read_text()
    assert "real *x = (float*)(malloc(n * sizeof *x)), *y;" in text
    assert "y = (float*)(argc > 2 ? NULL : calloc(n, sizeof(real)));" in text
    assert "{ return transpile_gpu_dot(n, (const float *)x, (const float *)y);" in text
    assert text.count("typedef float real;") == 1
    nvcc_builds(cu, tmp_path)
    ran = run_simulated(cu, tmp_path / "sim", "300")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout == run_gcc([src], tmp_path, ["-I" + str(inc)], "300").stdout == "300 8651.0\n"


def test_body_keeps_the_line_numbers(tmp_path: Path) -> None:
    """The lines after an offloaded function keep their numbers (nvcc's messages point at the
    user's lines): a C++ error after the function is reported at its own line, with no output."""
    src = tmp_path / "late.c"
    src.write_text("void zero(int n, float *a)\n{\n  for (int i = 0; i < n; i++)\n    a[i] = 0;\n}\n\n"
                   "int main(void)\n{\n  float *a = 0;\n  int class = 3;\n  zero(class, a);\n  return 0;\n}\n")
    cu = tmp_path / "late.cu"
    r = transpile("--emit", "program", str(src), "--no-verify", "-o", str(cu))
    assert r.returncode == 1
    assert re.search(r"late\.c:10:\d+: error: --emit program: the C program does not compile as C\+\+", r.stderr)
    assert "Traceback" not in r.stderr and not cu.exists()


def test_variable_length_array_parameters_are_refused(tmp_path: Path) -> None:
    """examples/gemm.c's C99 parameters (``double C[ni][nj]``) have no C++ form: a located error
    that says what to do, exit 1, no output."""
    cu = tmp_path / "gemm.cu"
    r = transpile("--emit", "program", str(ROOT / "examples" / "gemm.c"), "--no-verify", "-o", str(cu))
    assert r.returncode == 1
    assert re.search(r"gemm\.c:13:\d+: error: --emit program: a variable-length array parameter", r.stderr)
    assert "fixed extents" in r.stderr and not cu.exists()


def test_readme_first_command(tmp_path: Path) -> None:
    """The README's first command, as written (after its ``pip install -e . &&``), builds heat.cu and,
    where nvcc is, ``heat``; the program prints what gcc's build of examples/heat.c prints."""
    first = (ROOT / "README.md").read_text().split("```sh\n", 1)[1].splitlines()[0]
    assert first.startswith("pip install -e . && transpile --emit program examples/heat.c -o heat.cu"), first
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for cmd in first.split(" && ")[1:]:
        argv = shlex.split(cmd)
        if argv[0] == "transpile":
            r = transpile(*argv[1:], "--no-verify", cwd=tmp_path)
        elif NVCC is not None:
            r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        else:
            continue
        assert r.returncode == 0, f"{cmd}\n{r.stderr[-3000:]}"
    ran = run_simulated(tmp_path / "heat.cu", tmp_path / "sim", "40")
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout == run_gcc([ROOT / "examples" / "heat.c"], tmp_path, [], "40").stdout
    assert ran.stdout.startswith("heat 40x40 after 2000 sweeps")

"""Stage (a) reads the candidate's drop-in signature with the compiler (transpile/verify/symbols.py):
honest files written in styles a text heuristic misreads are accepted, wrong parameter types,
counts, return types, C++ linkage and a missing definition are refused with a clear message."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from transpile.toolchain import nvcc
from transpile.verify import Options, verify_file

ROOT = Path(__file__).resolve().parent.parent
CHEATS = ROOT / "tests" / "cheats"
DOT = CHEATS / "dot.c"
OK_DOT = (CHEATS / "ok_dot.cu").read_text()

pytestmark = pytest.mark.skipif(nvcc() is None or shutil.which("gcc") is None or shutil.which("nm") is None,
                                reason="the signature check needs nvcc, nm and gcc")

_DROPIN = 'extern "C" void dot(int n, double* x, double* y, double* out)'

_MACROS = """\
#include <cstdio>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \\
    fprintf(stderr, "%s\\n", cudaGetErrorString(e_)); } } while (0)
#if defined(USE_FAST_PATH) && (USE_FAST_PATH > 1)
#define GRID(n) ((n) / 64)
#else
#define GRID(n) (((n) + 63) / 64)
#endif
"""

# One honest file in every style a text heuristic misreads (one compile keeps the test cheap):
# a do { } while (0) macro and an #if defined block just before the drop-in, a comment and a
# string quoting other prototypes of it, a template kernel and a helper template device function,
# a namespace, const and __restrict__ pointers, an extern "C" block holding a declaration first.
HONEST = (OK_DOT.replace("__global__ void dot_kernel(", "namespace impl {\ntemplate <typename T> __device__ T "
                         "mul(T a, T b) { return a * b; }\ntemplate <int B> __global__ void dot_kernel(")
          .replace("__shared__ double part[BLOCK];", "__shared__ double part[B];")
          .replace("part[t] = i < n ? x[i] * y[i] : 0.0;", "part[t] = i < n ? mul(x[i], y[i]) : 0.0;")
          .replace("dot_kernel<<<", "impl::dot_kernel<BLOCK><<<")
          .replace("cudaMemset(dout, 0, sizeof(double));", "CK(cudaMemset(dout, 0, sizeof(double)));")
          .replace(_DROPIN, '}  // namespace impl\n' + _MACROS + '// extern "C" void dot(float *a);\n'
                   '/* extern "C" void dot( */\nstatic const char *doc = "extern \\"C\\" void dot(int);";\n'
                   'extern "C" {\nvoid dot(int, const double *, const double *, double *);\n'
                   'void dot(const int n, const double *__restrict__ x, const double *__restrict__ y, double *out)')
          + "}\n")

WRONG: dict[str, tuple[str, str]] = {
    "float-pointer": (OK_DOT.replace(_DROPIN, 'extern "C" void dot(int n, float* x, double* y, double* out)'),
                      "parameter 2 ('x') must be a pointer to double"),
    "cpp-linkage": (OK_DOT.replace(_DROPIN, "void dot(int n, double* x, double* y, double* out)"),
                    "not extern \"C\""),
    "declared-only": (OK_DOT.replace(_DROPIN, 'extern "C" void dot(int n, double* x, double* y, double* out);\n'
                                     'extern "C" void dot_v2(int n, double* x, double* y, double* out)'),
                      "defines no function 'dot'"),
}


def _stage_a(tmp_path: Path, name: str, text: str) -> object:
    cu = tmp_path / f"dot_{name}.cu"
    cu.write_text(text)
    return verify_file(cu, DOT, options=Options(seed=1, stages="a", gpu=False))


def test_honest_styles_pass_every_cpu_stage(tmp_path: Path) -> None:
    cu = tmp_path / "dot_styles.cu"
    cu.write_text(HONEST)
    report = verify_file(cu, DOT, options=Options(seed=3, stages="abc", gpu=False))
    assert report.ok, report.summary()
    assert not any("read from the text" in n for n in report.notes), report.notes


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_signatures_fail_stage_a(tmp_path: Path, name: str) -> None:
    text, expected = WRONG[name]
    report = _stage_a(tmp_path, name, text)
    failure = report.failure  # type: ignore[attr-defined]
    assert failure is not None and (failure.key, failure.check) == ("a", "signature"), report.summary()  # type: ignore[attr-defined]
    assert expected in failure.message, failure.message
    if name == "float-pointer":  # located at the definition
        line = text[:text.index('extern "C" void dot(')].count("\n") + 1
        assert f"dot_{name}.cu:{line}:" in failure.message, failure.message


def test_a_long_array_is_the_reference_s_64_bit_integer_array(tmp_path: Path) -> None:
    """C's ``long`` is the IR's i64 (LP64), printed ``long long`` by the back end but kept ``long`` in the
    drop-in's signature, as the C source has it: the same width and signedness is the same array (it
    was refused as "must be a pointer to long long"); an unsigned or narrower element is not."""
    from transpile import driver

    src = tmp_path / "lmap.c"
    src.write_text("void lmap(int n, long a[n], unsigned long b[n]) {\n"
                   "  for (int i = 0; i < n; i++) b[i] = a[i] + 1;\n}\n")
    result = driver.compile(src, driver.Options(function="lmap"))
    assert [r.verdict for r in result.reports] == ["pass"]
    cu = tmp_path / "lmap.cu"
    for wrong in ("unsigned long", "int"):
        cu.write_text(f'extern "C" void lmap(int n, const {wrong} *a, unsigned long *b) {{\n'
                      "  for (int i = 0; i < n; i++) b[i] = a[i] + 1;\n}\n")
        report = verify_file(cu, src, options=Options(seed=1, stages="a", gpu=False))
        failure = report.failure  # type: ignore[attr-defined]
        assert failure is not None and "parameter 2 ('a') must be a pointer to long long" in failure.message, \
            report.summary()

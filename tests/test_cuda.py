"""Tests for transpile/cuda.py: expression printing, statement rendering, nvcc, goldens."""

from __future__ import annotations

import ctypes
import dataclasses
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

from passes import map_gpu
from tests.test_map_gpu import (
    ALL,
    arr,
    at,
    b,
    c,
    clamp_func,
    clamp_kernel,
    device_scalar,
    gemm,
    host_loops,
    jacobi_1d,
    kernel,
    loop,
    sc,
    v,
)
from transpile import cuda, ir
from transpile.ir import F32, F64, I32, I64, U32, U64

GOLDEN = Path(__file__).parent / "golden"

x, y, z = v("x"), v("y"), v("z")
fx, fy = v("fx", F64), v("fy", F64)


def show(e: ir.Expr, **extents: tuple[ir.Expr, ...]) -> str:
    return cuda.ExprPrinter(extents)(e)


# ---------------------------------------------------------------------------
# Expressions


@pytest.mark.parametrize("expr, text", [
    (b("-", x, b("-", y, z)), "x - (y - z)"),
    (b("-", b("-", x, y), z), "x - y - z"),
    (b("*", b("+", x, y), z), "(x + y) * z"),
    (b("+", x, b("*", y, z)), "x + y * z"),
    (b("/", x, b("*", y, z)), "x / (y * z)"),
    (b("*", b("/", x, y), z), "x / y * z"),
    (b("%", x, b("%", y, z)), "x % (y % z)"),
    (b("-", x, c(-1)), "x - -1"),
    (b("+", x, c(-1)), "x + -1"),
    (b("*", c(-2), x), "-2 * x"),
    (ir.Unary("-", c(-1), I32), "-(-1)"),
    (ir.unary("-", ir.unary("-", x)), "-(-x)"),
    (b("-", x, ir.unary("-", y)), "x - -y"),
    (ir.unary("-", b("+", x, y)), "-(x + y)"),
    (ir.unary("!", b("<", x, y)), "!(x < y)"),
    (ir.unary("~", x), "~x"),
    (b("<", b("+", x, c(1)), y), "x + 1 < y"),
    (b("==", b("<", x, y), z), "(x < y) == z"),
    (b("||", x, b("&&", y, z)), "x || (y && z)"),
    (b("&&", b("||", x, y), z), "(x || y) && z"),
    (b("&&", b("<", x, y), b(">=", y, z)), "x < y && y >= z"),
    (b("<<", x, b("+", y, c(1))), "x << (y + 1)"),
    (b("&", x, b("==", y, z)), "x & (y == z)"),
    (b("|", b("|", x, y), z), "x | y | z"),
    (b("&", v("w", I64), b("+", ir.cast(x, I64), v("w", I64))), "w & ((long long)x + w)"),
    (ir.select(b(">", x, y), x, y), "x > y ? x : y"),
    (ir.select(ir.select(x, y, z), x, y), "(x ? y : z) ? x : y"),
    (ir.select(x, y, ir.select(y, z, x)), "x ? y : y ? z : x"),
    (b("+", ir.select(x, y, z), c(1)), "(x ? y : z) + 1"),
    (b("*", fx, x), "fx * (double)x"),
    (ir.cast(b("+", x, y), F64), "(double)(x + y)"),
    (ir.cast(c(-1), F64), "(double)(-1)"),
    (ir.cast(at("A", x), I32), "(int)A[x]"),
    (b("+", ir.cast(v("u", U32), I64), v("w", I64)), "(long long)u + w"),
    (ir.call("sqrt", (b("+", fx, fy),), (F64,), F64), "sqrt(fx + fy)"),
    (ir.call("powf", (v("s", F32), c(2.0, F32)), (F32, F32), F32), "powf(s, 2.0f)"),
])
def test_expressions(expr: ir.Expr, text: str) -> None:
    assert show(expr) == text


@pytest.mark.parametrize("value, ty, text", [
    (1.0, F64, "1.0"),
    (0.1, F64, "0.1"),
    (-2.5, F64, "-2.5"),
    (1e16, F64, "1e+16"),
    (1e-5, F64, "1e-05"),
    (0.1, F32, "0.1f"),
    (1.0, F32, "1.0f"),
    (3.4028234663852886e38, F32, "3.4028235e+38f"),
    (float("inf"), F64, "HUGE_VAL"),
    (-float("inf"), F32, "-HUGE_VALF"),
    (7, I32, "7"),
    (-7, I32, "-7"),
    (-(2**31), I32, "(-2147483647 - 1)"),
    (7, I64, "7LL"),
    (-(2**63), I64, "(-9223372036854775807LL - 1)"),
    (7, U32, "7u"),
    (2**64 - 1, U64, "18446744073709551615ull"),
])
def test_literals(value: float, ty: ir.Scalar, text: str) -> None:
    assert show(ir.const(value, ty)) == text


def test_f32_literal_round_trips() -> None:
    import numpy as np

    for value in (0.1, 1 / 3, 123456.7, 1e-40, 16777217.0):
        e = ir.const(value, F32)
        assert np.float32(show(e).rstrip("f")) == np.float32(e.value)


def test_flattened_indices() -> None:
    n_, m_ = v("n"), v("m")
    assert show(at("A", x, y), A=(m_,)) == "A[(long long)x * m + y]"
    assert show(at("A", x, y, z), A=(m_, c(4))) == "A[((long long)x * m + y) * 4 + z]"
    # Constant offsets are added to the flattened variable part (a stencil's neighbours share it);
    # not when the variable part is an extent (n - 1) or unsigned, nor for a constant subscript alone.
    assert show(at("A", b("+", x, c(1)), y), A=(b("+", m_, c(1)),)) == "A[(long long)x * (m + 1) + y + 1LL * (m + 1)]"
    assert show(at("A", b("+", x, c(1)), y, b("-", z, c(1))), A=(n_, n_)) == \
        "A[((long long)x * n + y) * n + z + (1LL * n * n - 1LL)]"
    assert show(at("A", b("+", c(1), x), b("-", y, c(1))), A=(n_,)) == "A[(long long)x * n + y + (1LL * n - 1LL)]"
    assert show(at("A", x, b("-", y, c(1))), A=(n_,)) == "A[(long long)x * n + y - 1LL]"
    assert show(at("A", b("-", n_, c(1)), y), A=(n_,)) == "A[(long long)(n - 1) * n + y]"
    assert show(at("A", b("+", v("u", U32), c(1)), y), A=(n_,)) == "A[(long long)(u + (unsigned int)1) * n + y]"
    assert show(at("A", c(0), y), A=(n_,)) == "A[y]"
    assert show(at("A", c(2), y), A=(n_,)) == "A[2LL * n + y]"
    assert show(at("A", x, c(0), c(0)), A=(n_, m_)) == "A[(long long)x * n * m]"
    assert show(at("A", v("w", I64), y), A=(n_,)) == "A[w * n + y]"
    assert show(at("A", x, b("-", y, z)), A=(n_,)) == "A[(long long)x * n + (y - z)]"



def test_offsets_stay_in_a_sequential_loops_subscript() -> None:
    """Inside a device-side sequential ``j`` loop, ``p[i][j - 1]`` keeps ``(j - 1)`` (nvcc forwards the
    element the previous iteration stored: adi's sweeps); an offset on the parallel ``i`` is still split,
    and after the loop ``j`` is no longer sequential.  A host loop's variable is not a device loop's."""
    n_, i, j = v("n"), v("i"), v("j")
    p = lambda r, col: ir.Index("p", (r, col), F64)  # noqa: E731
    body = (ir.assign(p(i, j), b("+", p(i, b("-", j, c(1))), p(b("-", i, c(1)), j))),)
    expr = cuda.ExprPrinter({"p": (n_,)})
    out = cuda.StmtPrinter(expr, cuda.Namer({"x", "y", "z", "n", "i"}), depth=0).emit(
        [ir.For("j", I32, c(1), n_, 1, body)])
    assert out[1] == "  p[(long long)i * n + j] = p[(long long)i * n + (j - 1)] + p[(long long)i * n + j - 1LL * n];"
    assert expr(p(i, b("-", j, c(1)))) == "p[(long long)i * n + j - 1LL]"  # outside the loop: split
    assert not expr.serial

# ---------------------------------------------------------------------------
# Statements


def lines(*stmts: ir.Stmt) -> list[str]:
    return cuda.StmtPrinter(cuda.ExprPrinter(), cuda.Namer({"x", "y", "z", "n", "i"}), depth=0).emit(stmts)


def test_for_loops() -> None:
    body = ir.assign(x, v("i"), "+")
    i = v("i")
    assert lines(loop("i", c(0), v("n"), body)) == ["for (int i = 0; i < n; ++i) {", "  x += i;", "}"]
    assert lines(loop("i", c(0), v("n"), body, step=3))[0] == "for (int i = 0; i < n; i += 3) {"
    assert lines(loop("i", c(1), b("+", v("n"), c(1)), body)) == [
        "const int i_hi = n + 1;", "for (int i = 1; i < i_hi; ++i) {", "  x += i;", "}"]
    assert lines(loop("i", c(0), v("n"), body, step=-1))[0] == "for (int i = n - 1; i >= 0; --i) {"
    assert lines(loop("i", b("*", y, c(2)), c(10), body, step=-2))[:2] == [
        "const int i_lo = y * 2;", "for (int i = 9; i >= i_lo; i -= 2) {"]
    u = loop("u", c(0, U32), v("m", U32), ir.assign(x, ir.cast(v("u", U32), I32), "+"), step=-1, ty=U32)
    assert lines(u)[:2] == ["for (unsigned int u_c = m; u_c > 0u; --u_c) {", "  const unsigned int u = u_c - 1;"]
    u3 = loop("u", c(1, U32), v("m", U32), ir.assign(x, ir.cast(v("u", U32), I32), "+"), step=-3, ty=U32)
    assert lines(u3)[0] == "for (unsigned int u_c = m; u_c > 1u; u_c = u_c - 1u > 3 ? u_c - 3 : 1u) {"
    del i


def test_par_loop_is_grid_stride() -> None:
    out = lines(ir.For("i", I32, c(1), v("n"), 1, (ir.assign(x, v("i")),), par="y"))
    assert out == [
        "for (long long i_g = (long long)1 + (long long)blockIdx.y * blockDim.y + threadIdx.y; i_g < n;"
        " i_g += (long long)gridDim.y * blockDim.y) {",
        "  const int i = (int)i_g;",
        "  x = i;",
        "}",
    ]


def test_assignments_and_ifs() -> None:
    s = v("s", F32)
    assert lines(ir.assign(s, c(2.0), "*")) == ["s *= 2.0;"]  # float s *= double: same C meaning
    assert lines(ir.assign(x, b("+", y, x))) == ["x = y + x;"]
    assert lines(ir.assign(x, c(1), "<<")) == ["x <<= 1;"]
    assert lines(ir.Decl("q", F64), ir.Decl("r", F64, c(0.0))) == ["double q;", "double r = 0.0;"]
    chain = ir.If(b("<", x, c(0)), (ir.assign(y, c(0)),),
                  (ir.If(b(">", x, c(9)), (ir.assign(y, c(9)),), (ir.assign(y, x),)),))
    assert lines(chain) == [
        "if (x < 0) {", "  y = 0;", "} else if (x > 9) {", "  y = 9;", "} else {", "  y = x;", "}"]


# ---------------------------------------------------------------------------
# Whole files


def renames() -> ir.Kernel:
    """User names that clash with C++ keywords, generated names and extents that change."""
    new, this, nn = v("new"), v("this"), v("n")
    return kernel(
        "renames", [sc("n"), sc("stream"), sc("err", F64), arr("class", "inout", nn, nn)],
        ir.Decl("new", I32, b("*", nn, c(2))),
        ir.assign(nn, c(1), "-"),  # the extent of `class` keeps its entry value
        loop("i_g", c(0), nn, loop("this", c(0), new,
             ir.assign(at("class", v("i_g"), this), b("+", v("err", F64), ir.cast(v("stream"), F64))))))


def full_module() -> ir.Module:
    return ir.Module((clamp_func(),), tuple(map_gpu.run(f()) for f in [*ALL, renames]))


def test_renamed_identifiers() -> None:
    text = cuda.emit(ir.Module((), (map_gpu.run(renames()),)), source="renames.c")
    assert "double *__restrict__ class_" in text and "int new_ = n * 2;" in text
    assert "cudaStream_t stream1" in text
    assert "class_[(long long)i_g * class_n1 + this_]" in text
    assert "const long long class_n1 = n;" in text


def test_unmapped_kernel_is_rejected() -> None:
    with pytest.raises(AssertionError, match="not mapped"):
        cuda.emit(ir.Module((), (gemm(),)), source="gemm.c")


def test_deterministic() -> None:
    assert cuda.emit(full_module(), source="all.c") == cuda.emit(full_module(), source="all.c")


def test_skeleton() -> None:
    text = cuda.emit(full_module(), source="all.c")
    assert text.startswith("// Generated by transpile from all.c. Do not edit.\n#include <cuda_runtime.h>\n")
    for name in ("gemm", "normalize", "saturate", "mixed"):
        assert f'extern "C" void {name}(' in text
        assert f'extern "C" cudaError_t {name}_device(' in text
        assert "__global__ void __launch_bounds__" in text
    assert text.count("= cudaGetLastError()") == text.count("<<<")  # the drop-in runtime clears errors too
    assert "normalize_scalars" in text and "double inv = *inv_ptr;" in text and "const double inv = *inv_ptr;" in text


def test_host_loops() -> None:
    text = cuda.emit(ir.Module((), (map_gpu.run(host_loops()),)), source="steps.c")
    device = text[text.index("static cudaError_t steps_run("):text.index("// Drop-in")]  # phased: see cuda_host.plan
    assert "for (int t = 0; t < tsteps; ++t) {" in device
    assert "for (int s = 1; s >= 0; --s) {" in device
    # Loop variable and host-loop local passed by value; count lives on the device.
    assert "steps_kernel0<<<" in device and ">>>(n, A, t, w);" in device
    assert "int count;" in text and "&scal->count" in device
    # Every host loop is followed by an error check (a launch's `break` only leaves the loop).
    assert device.count("    if (err != cudaSuccess) {\n      break;\n    }\n") >= 1
    # launches, 2 host loops, allocating and initialising the device scalar, the drop-in's hook points
    assert device.count("break;") == device.count("<<<") + 2 + 2 + device.count("= hook(hook_ctx, ")


def test_jacobi_launches_inside_time_loop() -> None:
    text = cuda.emit(ir.Module((), (map_gpu.run(jacobi_1d()),)), source="jacobi_1d.c")
    loop_at = text.index("for (int t = 0; t < tsteps; ++t) {")
    assert loop_at < text.index("jacobi_1d_kernel0<<<") < text.index("jacobi_1d_kernel1<<<")


@pytest.mark.parametrize("name, make, funcs", [
    ("gemm", gemm, ()),
    ("jacobi_1d", jacobi_1d, ()),
    ("normalize", device_scalar, ()),
    ("saturate", clamp_kernel, (clamp_func,)),
])
def test_golden(name: str, make, funcs, update_goldens: bool) -> None:  # type: ignore[no-untyped-def]
    module = ir.Module(tuple(f() for f in funcs), (map_gpu.run(make()),))
    text = cuda.emit(module, source=f"{name}.c")
    path = GOLDEN / f"{name}.cu"
    if update_goldens:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.read_text() == text, f"{path} is stale; rerun with --update-goldens and review the diff"


NVCC = shutil.which("nvcc") or "nvcc"  # tests needing it skip when it is missing
HAVE_NVCC = shutil.which("nvcc") is not None


@pytest.fixture(scope="module")
def cu_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cuda") / "all.cu"
    path.write_text(cuda.emit(full_module(), source="all.c"))
    return path


@pytest.mark.skipif(not HAVE_NVCC, reason="nvcc not on PATH")
@pytest.mark.parametrize("flags", [
    ["-cubin", "-Werror", "all-warnings"],  # device code
    ["-c", "--Werror", "all-warnings", "-Xcompiler", "-Wall,-Wextra,-Werror"],  # host code too
], ids=["cubin", "object"])
def test_nvcc_compiles(cu_file: Path, flags: list[str]) -> None:
    out = cu_file.with_suffix(".out")
    proc = subprocess.run([NVCC, "-arch=sm_90", *flags, str(cu_file), "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------
# GPU tier: run the emitted code and compare with the reference interpreter


def _has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    return smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0


_CTYPES = {"i8": "c_int8", "i16": "c_int16", "i32": "c_int32", "i64": "c_int64", "u8": "c_uint8",
           "u16": "c_uint16", "u32": "c_uint32", "u64": "c_uint64", "f32": "c_float", "f64": "c_double"}


class _Prefix(ir.Transformer):
    """Renames helper functions and their calls (so several modules fit one file)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Call(self, e: ir.Call) -> ir.Call:
        e = self.generic_visit(e)
        return dataclasses.replace(e, fn=self.names[e.fn]) if e.fn in self.names else e


def _merge(modules: list[ir.Module]) -> tuple[ir.Module, list[ir.Module]]:
    """One module holding every kernel and func of ``modules``, each renamed ``m<i>_<name>``."""
    funcs: list[ir.Func] = []
    kernels: list[ir.Kernel] = []
    renamed: list[ir.Module] = []
    for n_, m_ in enumerate(modules):
        names = {f.name: f"m{n_}_{f.name}" for f in m_.funcs}
        names |= {k_.name: f"m{n_}_{k_.name}" for k_ in m_.kernels}
        fs = tuple(dataclasses.replace(_Prefix(names).transform(f), name=names[f.name]) for f in m_.funcs)
        ks = tuple(dataclasses.replace(_Prefix(names).transform(k_), name=names[k_.name]) for k_ in m_.kernels)
        renamed.append(ir.Module(fs, ks))
        funcs += fs
        kernels += ks
    return ir.Module(tuple(funcs), tuple(kernels)), renamed


def _run_on_gpu(lib: ctypes.CDLL, k: ir.Kernel, args: dict[str, object]) -> dict[str, np.ndarray]:
    fn = getattr(lib, k.name)
    fn.restype = None
    argv: list[object] = []
    out: dict[str, np.ndarray] = {}
    for p in k.params:
        if isinstance(p.ty, ir.Scalar):
            argv.append(getattr(ctypes, _CTYPES[p.ty.name])(args[p.name]))
        else:
            a = np.array(args[p.name], copy=True, order="C")
            out[p.name] = a
            argv.append(ctypes.c_void_p(a.ctypes.data))
    fn(*argv)
    return out


def _close(name: str, got: np.ndarray, want: np.ndarray) -> None:
    if got.dtype.kind == "f":
        # CUDA's libm differs from glibc by an ulp or two; nvcc is told not to contract into FMAs.
        rtol, atol = (1e-4, 1e-5) if got.dtype == np.float32 else (1e-9, 1e-12)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(got, want, err_msg=name)


def _random_modules(count: int) -> list[ir.Module]:
    """``count`` random modules from tests/strategies.py, the same on every run."""
    from tests import strategies

    out: list[ir.Module] = []

    @settings(max_examples=count, deadline=None, derandomize=True, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(strategies.modules())
    def collect(module: ir.Module) -> None:
        out.append(module)

    collect()
    return out


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_NVCC or not _has_gpu(), reason="needs nvcc and a CUDA GPU")
def test_random_kernels_match_interpreter(tmp_path: Path) -> None:
    """Random kernels (tests/strategies.py) plus the hand-written ones, on the GPU vs ``interp``."""
    from tests.test_map_gpu import random_args
    from transpile.ir import interp

    modules = _random_modules(150)
    modules.append(ir.Module((clamp_func(),), tuple(f() for f in ALL)))
    merged, renamed = _merge(modules)
    mapped = ir.Module(merged.funcs, tuple(map_gpu.run(k_) for k_ in merged.kernels))
    src = tmp_path / "random.cu"
    src.write_text(cuda.emit(mapped, source="random"))
    lib_path = tmp_path / "librandom.so"
    proc = subprocess.run([NVCC, "-arch=sm_90", "--fmad=false", "-shared", "-Xcompiler", "-fPIC",
                           str(src), "-o", str(lib_path)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lib = ctypes.CDLL(str(lib_path))
    ran = 0
    # Sizes 3 everywhere; the hand-written kernels also at 37 (several blocks per grid dimension).
    for m_, size in [*((m_, 3) for m_ in renamed), (renamed[-1], 37)]:
        for k_ in m_.kernels:
            args = random_args(k_, seed=1, size=size)
            try:
                want = interp.run(m_, k_.name, args)
            except interp.InterpError:
                continue
            got = _run_on_gpu(lib, k_, args)
            for name in want:
                _close(f"{k_.name}.{name} ({src})", got[name], want[name])
            ran += 1
    assert ran > 100


def test_trap_aborts_in_host_code() -> None:
    """A trap prints as ``transpile_check`` reports: ``transpile: FUNCTION: LOC: message`` on stderr,
    then ``abort()``, in the host code before the launch (escaped as a C string)."""
    from transpile.ir import text

    src = ("kernel k(i32 n, i32 s, inout f64 x[n]) {\n  if (0 < n && s <= 0) {\n    trap \"step \\\"s\\\" <= 0\";\n"
           "  }\n  for i in 0..n {\n    x[i] = x[i] * 2.0;\n  }\n}\n")
    code = cuda.emit(ir.Module((), (map_gpu.run(text.parse(src, "k.ir").kernels[0]),)), source="k.ir")
    lines = code.splitlines()
    at = lines.index('      fputs("transpile: k: k.ir:3:5: step \\"s\\" <= 0\\n", stderr);')
    assert lines[at - 1].strip() == "if (0 < n && s <= 0) {" and lines[at + 1].strip() == "abort();"
    device = code[:code.index('extern "C" cudaError_t k_device')]
    assert "fputs" not in device.split("__global__", 1)[1]

"""C functions that return a value (``double dot(...)``): the IR's return slot (``ir.Kernel.ret``), its
text form (``-> result``), the drop-in that returns the slot's element, and the verifier comparing the
C function's result with the drop-in's (the reference's entry stores it in the slot; the drop-in is
called with the C signature and its result stored there too)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from transpile import cuda, frontend, ir, pipeline
from transpile.diagnostics import TranspileError
from transpile.ir import check as ircheck
from transpile.ir import text
from transpile.verify import Options, verify_module
from transpile.verify.signature import check_dropin, dropin_returns, find_dropin, kernel_sig

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")

DOT = """double dot(int n, const double *x, const double *y) {
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i] * y[i];
  return s;
}
"""
ARGMAX = """int argmax(int n, const float v[n]) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return best;
}
"""


def _load(src: str, tmp_path: Path, name: str) -> tuple[Path, ir.Module]:
    path = tmp_path / f"{name}.c"
    path.write_text(src)
    return path, frontend.load(path)


def test_text_form_round_trips_and_is_checked(tmp_path: Path) -> None:
    _, m = _load(DOT, tmp_path, "dot")
    shown = text.show(m)
    assert "out f64 result[1]) -> result {" in shown and "result[0] = s;" in shown
    assert text.parse(shown) == m
    bad = shown.replace("-> result", "-> s")
    with pytest.raises(TranspileError, match="return slot 's' must be the kernel's last parameter"):
        text.parse(bad)
    k = m.kernels[0]
    for broken in (ir.Kernel(k.name, k.params[:-1], k.body, "result"),
                   ir.Kernel(k.name, (*k.params[:-1], ir.Param("result", ir.ArrayType(ir.F64, (ir.Var("n", ir.I32),)),
                                                               "out")), k.body, "result")):
        with pytest.raises(TranspileError, match="return slot"):
            ircheck.check(ir.Module((), (broken,)))


def test_the_drop_in_returns_the_value_and_the_device_entry_takes_the_slot(tmp_path: Path) -> None:
    path, m = _load(DOT, tmp_path, "dot")
    cu = cuda.emit(pipeline.lower(m), source=path.name)
    assert 'extern "C" double dot(int n, const double *x, const double *y)' in cu and "  return result[0];" in cu
    assert "// double dot(int n, double *x, double *y);" in cu
    sig = kernel_sig(m.kernels[0])
    params, extern_c = find_dropin(cu, "dot")
    assert extern_c and dropin_returns(cu, "dot") == "f64" and not check_dropin(sig, params, "f64")
    assert check_dropin(sig, params, "f32") == ["dot must return f64 (the C function's result), found f32"]
    assert check_dropin(sig, params, "void")
    from transpile.search.env import dropin_signature

    assert dropin_signature(m.kernels[0]) == 'extern "C" double dot(int n, double *x, double *y)'
    device, _ = find_dropin(cu, "dot_device")
    assert device is not None and len(device) == len(sig.args) + 1 and not check_dropin(sig, device[:-1])


@needs_gxx
@pytest.mark.parametrize(("name", "src"), [("dot", DOT), ("argmax", ARGMAX)])
def test_returning_kernels_pass_stage_c(tmp_path: Path, name: str, src: str) -> None:
    path, module = _load(src, tmp_path, name)
    lowered = pipeline.lower(module)
    cu = cuda.emit(lowered, source=path.name)
    opts = Options(seed=3, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, cu, source=path, lowered=lowered, options=opts)
    assert report.verdict == "pass", report.reason
    assert "its result compared as 'result'" in report.stage("a").message


@needs_gxx
@pytest.mark.parametrize(("wrong", "check"), [
    ("  return result[0] + 1.0;", "mismatch"),  # a wrong value returned
    ("  return 0.0;", "mismatch"),  # the slot ignored
])
def test_a_wrong_result_fails(tmp_path: Path, wrong: str, check: str) -> None:
    path, module = _load(DOT, tmp_path, "dot")
    cu = cuda.emit(pipeline.lower(module), source=path.name)
    bad = cu.replace("  return result[0];", wrong)
    assert bad != cu
    opts = Options(seed=3, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, bad, source=path, options=opts)
    assert report.verdict == "fail" and f"[{check}]" in report.summary(), report.reason


@needs_gxx
def test_a_void_candidate_for_a_returning_function_fails_stage_a(tmp_path: Path) -> None:
    path, module = _load(DOT, tmp_path, "dot")
    cu = cuda.emit(pipeline.lower(module), source=path.name)
    bad = cu.replace('extern "C" double dot(', 'extern "C" void dot(').replace("  return result[0];", "")
    opts = Options(seed=3, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, bad, source=path, options=opts)
    assert report.verdict == "fail" and report.stage("a").check == "signature"
    assert "must return double" in report.stage("a").message  # the compiler's check (verify/symbols.py)


@needs_gxx
def test_the_gpu_workers_drop_in_call_stores_the_result(tmp_path: Path) -> None:
    # The GPU stages' worker calls drop-ins through its own ctypes helpers (it imports no transpile
    # module): the slot (intent 'ret') is left out of the call and the result stored through it.
    import ctypes
    import subprocess

    import numpy as np

    from transpile.verify import gpu, gpu_worker

    src = tmp_path / "f.c"
    src.write_text("double f(int n, double *x) { double s = 0; for (int i = 0; i < n; i++) s += x[i]; return s; }\n")
    lib_path = tmp_path / "libf.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(lib_path), str(src)], check=True)
    _, module = _load("double f(int n, double x[n]) {\n  double s = 0;\n  for (int i = 0; i < n; i++) s += x[i];\n"
                      "  return s;\n}\n", tmp_path, "g")
    params = gpu._params(kernel_sig(module.kernels[0]))
    assert params[-1] == ("result", "f64", True, "ret")
    x, slot = np.arange(5.0), np.full(1, np.nan)
    addresses = {"x": x.ctypes.data, "result": slot.ctypes.data}
    fn = ctypes.CDLL(str(lib_path))["f"]
    store = gpu_worker._dropin(fn, params)
    _, values = gpu_worker._args(params, {"n": np.int32(5)}, addresses, dropin=True)
    store(fn(*values), addresses)
    assert slot[0] == 10.0

"""Index arrays in the verifier's inputs: an integer input whose values subscript another array
(a gather's ``idx``, a histogram's bins, CSR's ``col`` and ``rowptr``) is drawn inside that array
(signature.IndexUse, KernelSig.index_range, synth._int_array), so the C reference is defined and a
correct kernel is not failed for the reference's out-of-bounds reads (it was: a gather failed
stage (c) with a mismatch, CSR SpMV found no shape it could test)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from transpile import cuda, frontend, pipeline
from transpile.ir import text
from transpile.verify import Options, verify_module
from transpile.verify.signature import IndexUse, kernel_sig
from transpile.verify.synth import DISTRIBUTIONS, Shape, draw

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")

GATHER = """void gather(int n, int m, int idx[n], double a[m], double b[n]) {
  for (int i = 0; i < n; i++) { int j = idx[i]; b[i] = a[j + 1] - a[j]; }
}
"""
HIST = """void hist(int n, int nb, int bin[n], double w[n], double h[nb]) {
  for (int b = 0; b < nb; b++) h[b] = 0.0;
  for (int i = 0; i < n; i++) h[bin[i]] += w[i];
}
"""
SPMV = """void spmv(int n, int nnz, int rowptr[n + 1], int col[nnz], double val[nnz], double x[n], double y[n]) {
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int k = rowptr[i]; k < rowptr[i + 1]; k++)
      s += val[k] * x[col[k]];
    y[i] = s;
  }
}
"""


def _kernel(src: str, tmp_path: Path, name: str):  # noqa: ANN202
    path = tmp_path / f"{name}.c"
    path.write_text(src)
    return path, frontend.load(path)


def _ir(src: str):  # noqa: ANN202
    return text.parse(src).kernels[0]


def test_uses_found_directly_through_a_local_and_as_loop_bounds(tmp_path: Path) -> None:
    _, m = _kernel(GATHER, tmp_path, "gather")
    assert set(kernel_sig(m.kernels[0]).indices) == {IndexUse("idx", "a", 0, 1), IndexUse("idx", "a", 0, 0)}
    _, m = _kernel(SPMV, tmp_path, "spmv")
    assert set(kernel_sig(m.kernels[0]).indices) == {
        IndexUse("col", "x", 0, 0), IndexUse("rowptr", "val", 0, 0, bound=True),
        IndexUse("rowptr", "col", 0, 0, bound=True)}
    # The second dimension of a 2-D target; an offset on the bound and on the subscript.
    k = _ir("kernel f(i32 n, in i32 s[n], in f64 A[n][n], out f64 y[n]) {\n"
            "  for i in 0..n {\n    for k in s[i] + 1..s[i] + 3 {\n      y[i] = A[i][k - 1];\n    }\n  }\n}\n")
    assert set(kernel_sig(k).indices) == {IndexUse("s", "A", 1, 0, bound=True), IndexUse("s", "A", 1, 2, bound=True)}


@pytest.mark.parametrize("body", [
    "y[i] = a[2 * idx[i]];",  # not index + constant
    "i32 j = idx[i];\n    j = j + 1;\n    y[i] = a[j];",  # a local assigned again
    "y[i] = a[idx[i] * n];",
])
def test_other_uses_constrain_nothing(body: str) -> None:
    k = _ir(f"kernel f(i32 n, in i32 idx[n], in f64 a[n], out f64 y[n]) {{\n  for i in 0..n {{\n    {body}\n  }}\n}}\n")
    assert kernel_sig(k).indices == ()


def test_an_index_array_the_kernel_writes_is_not_an_input_constraint() -> None:
    k = _ir("kernel f(i32 n, inout i32 idx[n], in f64 a[n], out f64 y[n]) {\n"
            "  for i in 0..n {\n    idx[i] = 0;\n    y[i] = a[idx[i]];\n  }\n}\n")
    assert kernel_sig(k).indices == ()


@pytest.mark.parametrize("dist", sorted(DISTRIBUTIONS))
def test_drawn_indices_stay_inside_their_targets(tmp_path: Path, dist: str) -> None:
    _, m = _kernel(GATHER, tmp_path, "gather")
    sig = kernel_sig(m.kernels[0])
    for n, size in ((9, 4), (33, 1), (5, 700)):
        x = draw(sig, Shape("t", {"n": n, "m": size}), np.random.default_rng(n), dist)
        assert x["idx"].dtype == np.int32 and x["idx"].min() >= 0 and x["idx"].max() <= size - 2 or size < 2
    _, m = _kernel(SPMV, tmp_path, "spmv")
    sig = kernel_sig(m.kernels[0])
    x = draw(sig, Shape("t", {"n": 17, "nnz": 40}), np.random.default_rng(3), dist)
    assert np.all(np.diff(x["rowptr"]) >= 0) and x["rowptr"].min() >= 0 and x["rowptr"].max() <= 40
    assert x["col"].min() >= 0 and x["col"].max() <= 16


def test_tiny_indices_collide_and_wide_ones_spread(tmp_path: Path) -> None:
    _, m = _kernel(HIST, tmp_path, "hist")
    sig = kernel_sig(m.kernels[0])
    tiny = draw(sig, Shape("t", {"n": 200, "nb": 500}), np.random.default_rng(0), "tiny")["bin"]
    wide = draw(sig, Shape("t", {"n": 200, "nb": 500}), np.random.default_rng(0), "uniform")["bin"]
    assert len(set(tiny.tolist())) <= 4 and len(set(wide.tolist())) > 100 and wide.max() < 500


@needs_gxx
@pytest.mark.parametrize("name", ["GATHER", "HIST", "SPMV"])
def test_index_kernels_pass_stage_c(tmp_path: Path, name: str) -> None:
    path, module = _kernel(globals()[name], tmp_path, name.lower())
    lowered = pipeline.lower(module)
    cu = cuda.emit(lowered, source=path.name)
    opts = Options(seed=7, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, cu, source=path, lowered=lowered, options=opts)
    assert report.verdict == "pass", report.reason
    assert len([s for s in report.shapes if s["stage"] == "c"]) >= 2


@needs_gxx
def test_a_wrong_gather_still_fails(tmp_path: Path) -> None:
    # The inputs are now in range: a kernel that reads the neighbour of the element it should
    # must still be refused (and not as the reference's undefined behaviour).
    path, module = _kernel(GATHER, tmp_path, "gather")
    cu = cuda.emit(pipeline.lower(module), source=path.name)
    wrong = cu.replace("a[j + 1] - a[j]", "a[j] - a[j + 1]")
    assert wrong != cu
    opts = Options(seed=7, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, wrong, source=path, options=opts)
    assert report.verdict == "fail" and "mismatch" in report.reason


SCATTER = """void scat(int n, int m, int idx[n], double a[n], double b[m]) {
  for (int i = 0; i < n; i++) b[idx[i]] = a[i];
}
"""


@needs_gxx
def test_a_scatter_stays_sequential_and_a_parallel_one_is_refused(tmp_path: Path) -> None:
    # Two i may write one element of b (the last one wins): the loop is not parallel, and the
    # compiler keeps it on one thread.  Made parallel by hand, it must fail now that the drawn
    # indices land inside b and collide (before, the reference itself wrote outside b).
    path, module = _kernel(SCATTER, tmp_path, "scat")
    lowered = pipeline.lower(module)
    cu = cuda.emit(lowered, source=path.name)
    seq = "  for (int i = 0; i < n; ++i) {\n    b[idx[i]] = a[i];"
    assert "__launch_bounds__(1) scat_kernel0" in cu and seq in cu
    opts = Options(seed=7, stages="abc", gpu=False, mode="quick")  # type: ignore[arg-type]
    (report,) = verify_module(module, cu, source=path, lowered=lowered, options=opts)
    assert report.verdict == "pass", report.reason
    par = (cu.replace("__launch_bounds__(1) scat_kernel0", "__launch_bounds__(256) scat_kernel0")
           .replace(seq, "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {\n"
                         "    b[idx[i]] = a[i];")
           .replace("scat_kernel0<<<dim3(1u), dim3(1u), 0, stream>>>",
                    "scat_kernel0<<<dim3((n + 255) / 256 > 0 ? (n + 255) / 256 : 1), dim3(256u), 0, stream>>>"))
    assert par.count("blockIdx.x * blockDim.x + threadIdx.x; i < n") == 1 and "dim3(256u), 0, stream" in par
    (report,) = verify_module(module, par, source=path, options=opts)
    assert report.verdict == "fail" and ("schedule" in report.reason or "mismatch" in report.reason), report.reason


@needs_gxx
def test_a_shape_with_no_room_for_the_indices_is_skipped(tmp_path: Path) -> None:
    # a[j + 1] with m = 1: no index value is in bounds, so the C program is undefined at n = m = 1
    # (it was failed there with a mismatch); the other shapes are tested.
    path, module = _kernel(GATHER, tmp_path, "gather")
    lowered = pipeline.lower(module)
    cu = cuda.emit(lowered, source=path.name)
    opts = Options(seed=7, stages="abc", gpu=False, mode="full", sim_work=200_000)  # type: ignore[arg-type]
    (report,) = verify_module(module, cu, source=path, lowered=lowered, options=opts)
    assert report.verdict == "pass", report.reason
    assert any("n=1" in n and "'idx' holds indices into 'a'" in n for n in report.notes), report.notes
    assert "n=1" not in [s["shape"] for s in report.shapes if s["stage"] == "c"]

"""Fixed extents lower as variable ones do (issue 39): the kernels of ``tests/kernels_real`` are written in
a benchmark suite's shape (size macros, arrays declared through macros, a utility translation unit, main
calling through array macros), and each lowers to the same launches whether its parameters are declared
with the fixed extents (``double x[NB][NT][NK]``, loops to ``nb <= NB``) or, with ``-D KR_VLA``, as
C99 variable-length arrays (``double x[nb][nt][nk]``, the form of ``tests/kernels``).  The pass each
kernel is there for must fire in both forms."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from passes import footprint
from passes.accesses import Affine
from tests.launch_structure import structure
from transpile import cuda, frontend, ir, pipeline
from transpile.ir import text

HERE = Path(__file__).resolve().parent / "kernels_real"

#: Each kernel and what shows the pass it is there for fired (on the lowered IR).
KERNELS = {
    "scratch": "expand",  # acc, filled afresh by every (b, t), gets a copy per (b, t)
    "relax": "closure",  # the min-plus closure: a host loop of two launches
    "upper": "snapshot",  # reads of y[k > i] read y's entry copy
    "smooth": "steps",  # time steps of a stencil: a host loop of launches
}

#: Structures known to differ, with the reason.  scratch: the copy's (b, t) loops collapse into one
#: row index of a matrix product (passes/collapse.py: x[b][t][...] is x'[b * NT + t][...] only when the
#: second extent is the loop bound nt), so the VLA form gets the tensor-core launch and the fixed form a
#: plain 3-D launch; both run every (b, t, p) in parallel.  A run-time version (nt == NT) is not built.
#: name -> (index of the first launch that differs, how many of the fixed form's and of the VLA form's
#: launches differ there): a tensor-core launch is two (its FMA kernel beside it, docs/architectures.md).
DIFFERS = {"scratch": (0, 1, 2)}


def _lower(name: str, vla: bool) -> tuple[ir.Kernel, list[str]]:
    module = frontend.load(HERE / f"{name}.c", function=f"kernel_{name}", include_dirs=[str(HERE)],
                           defines=["KR_VLA"] if vla else [])
    lowered = pipeline.lower(module)
    return lowered.kernels[0], structure(cuda.emit(lowered, source=f"{name}.c"), f"kernel_{name}")


def _fired(pass_name: str, k: ir.Kernel) -> bool:
    allocs = [s.name for s in k.body if isinstance(s, ir.Alloc)]
    host = [s for s in k.body if isinstance(s, ir.For)]
    if pass_name == "expand":
        return allocs == ["acc_x"] and not host
    if pass_name == "snapshot":
        return allocs == ["y_entry"]
    if pass_name == "closure":
        return len(host) == 1 and [type(s) for s in host[0].body] == [ir.Launch, ir.Launch, ir.Launch]
    return any(isinstance(s, ir.Launch) for h in host for s in h.body)


@pytest.mark.parametrize("name", KERNELS)
def test_fixed_and_variable_extents_lower_to_the_same_launches(name: str) -> None:
    fixed_k, fixed = _lower(name, vla=False)
    vla_k, vla = _lower(name, vla=True)
    assert isinstance(fixed_k.param(fixed_k.params[-1].name).ty, ir.ArrayType)
    assert all(isinstance(d, ir.Const) for p in fixed_k.params if isinstance(p.ty, ir.ArrayType)
               for d in p.ty.dims), "the fixed form has constant extents"
    assert _fired(KERNELS[name], vla_k), f"{KERNELS[name]} did not fire on the VLA form"
    assert _fired(KERNELS[name], fixed_k), f"{KERNELS[name]} did not fire on the fixed form"
    if name in DIFFERS:
        i, n_fixed, n_vla = DIFFERS[name]
        assert fixed[:i] + fixed[i + n_fixed:] == vla[:i] + vla[i + n_vla:]
        assert fixed[i:i + n_fixed] != vla[i:i + n_vla]
    else:
        assert fixed == vla


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("name", KERNELS)
def test_the_kernels_are_programs(name: str, tmp_path: Path) -> None:
    """Each file builds with its utility unit, in both forms, and both print the same result."""
    outs = []
    for extra in ([], ["-DKR_VLA"]):
        exe = tmp_path / f"{name}{len(outs)}"
        subprocess.run(["gcc", "-std=c99", "-O1", "-D_POSIX_C_SOURCE=199309L", "-Wall", "-Werror",
                        "-Wno-unknown-pragmas", *extra, str(HERE / f"{name}.c"), str(HERE / "kr_util.c"),
                        "-o", str(exe)], check=True)
        outs.append(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()[-1])
    assert outs[0] == outs[1]


FIXED_BOX = """kernel k(i32 ni, i32 nj, inout f64 c[8][6], in f64 a[8][6]) {
  for i in 0..ni {
    for j in 0..nj {
      c[i][j] = a[i][j] * 2.0;
    }
  }
}
"""


def test_box_bounds_over_fixed_extents_are_the_loop_bounds() -> None:
    """``c[8][6]`` written for ``i < ni``, ``j < nj``: the box ends at ``ni - 1``, ``nj - 1`` (calls with
    ``ni > 8`` leave the extent, undefined in C), not at the extents; an access under an ``if`` proves
    nothing about the sizes."""
    (k,) = text.parse(FIXED_BOX).kernels
    fp = footprint.analyze(k)
    (ilo, ihi), (jlo, jhi) = fp["c"].write_box
    assert (ihi, jhi) == (Affine.of({"ni": 1}, -1), Affine.of({"nj": 1}, -1))
    assert fp["c"].span((8, 6), {"ni": 3, "nj": 4}, writes=True) == (0, 2 * 6 + 3 + 1)
    guarded = text.parse(FIXED_BOX.replace("c[i][j] = a[i][j] * 2.0;",
                                           "if (i > 100) {\n        c[i][j] = a[i][j] * 2.0;\n      }")).kernels[0]
    (_, ihi), _ = footprint.analyze(guarded)["c"].write_box
    assert ihi is None  # min(ni - 1, 7): the extent's own bound


def _reference(name: str, tmp: Path) -> ctypes.CDLL:
    """The file as gcc compiles it (with its utility unit), as a shared library."""
    lib = tmp / f"ref_{name}.so"
    subprocess.run(["gcc", "-std=c99", "-O1", "-fPIC", "-shared", "-ffp-contract=off", "-D_POSIX_C_SOURCE=199309L",
                    "-Wno-unknown-pragmas", str(HERE / f"{name}.c"), str(HERE / "kr_util.c"), "-o", str(lib)],
                   check=True)
    return ctypes.CDLL(str(lib))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_scratch_below_its_extents_in_the_simulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fixed form's drop-in, with sizes below the extents (nb < NB, nt < NT, nk < NK): the expanded
    scratch, its copy back over acc[0..nk), the copies over the loops' box, and the host path leave every
    element (those outside the loops' box included) as gcc's build of the file does."""
    from tests.interp_check import sim_library

    module = frontend.load(HERE / "scratch.c", function="kernel_scratch", include_dirs=[str(HERE)])
    code = cuda.emit(pipeline.lower(module), source="scratch.c", host=module)
    lib = sim_library(code, tmp_path / "sim")
    ref = _reference("scratch", tmp_path)
    rng = np.random.default_rng(7)
    sizes = (5, 7, 9)
    x, w, acc = rng.random((12, 10, 16)), rng.random((16, 16)) - 0.5, rng.random(16)
    want = [a.copy() for a in (x, w, acc)]
    ptr = ctypes.POINTER(ctypes.c_double)
    ref.kernel_scratch(*[ctypes.c_int(s) for s in sizes], *[a.ctypes.data_as(ptr) for a in want])
    for path in ("0", "1"):
        monkeypatch.setenv("TRANSPILE_DROPIN_HOST", path)
        got = [a.copy() for a in (x, w, acc)]
        run = lib.run("kernel_scratch", *sizes, *got, restype=None)
        assert run.ok, run.diagnostics
        assert (run.launches == 0) == (path == "1")
        for g, r, label in zip(got, want, ("x", "w", "acc")):
            np.testing.assert_allclose(g, r, rtol=1e-12, atol=1e-14, err_msg=f"{label}, host path {path}")


FULL_AT_EXTENT = r"""
#define M 12
#define N 14
void kernel_corr(int m, int n, double data[N][M], double corr[M][M]) {
  for (int i = 0; i < m - 1; i++) {
    corr[i][i] = 1.0;
    for (int j = i + 1; j < m; j++) {
      corr[i][j] = 0.0;
      for (int k = 0; k < n; k++)
        corr[i][j] += data[k][i] * data[k][j];
      corr[j][i] = corr[i][j];
    }
  }
  corr[m - 1][m - 1] = 1.0;
}
"""


def test_an_array_written_in_full_only_at_its_extent_knows_when(tmp_path: Path) -> None:
    """``corr[M][M]`` written for ``i, j < m``: every element is written exactly when ``m == M`` (calls
    with ``m > M`` leave the extent), the drop-in's condition for skipping its copy-in."""
    src = tmp_path / "corr.c"
    src.write_text(FULL_AT_EXTENT)
    module = frontend.load(src, function="kernel_corr")
    fp = footprint.analyze(module.kernels[0])
    assert fp["corr"].copy_in and fp["corr"].full_when == ((Affine.of({"m": 1}, -12), "=="),)
    assert fp["data"].full_when is None


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_the_copy_in_is_skipped_exactly_when_the_sizes_write_everything(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The drop-in in the simulator: at ``m == M`` nothing of ``corr`` crosses to the device (only
    ``data``'s box), below it ``corr``'s box does and the elements the kernel skips keep their values;
    both as gcc's build computes them."""
    from tests.interp_check import sim_library

    src = tmp_path / "corr.c"
    src.write_text(FULL_AT_EXTENT)
    module = frontend.load(src, function="kernel_corr")
    code = cuda.emit(pipeline.lower(module), source="corr.c", host=module)
    lib = sim_library(code, tmp_path / "sim")
    ref_so = tmp_path / "ref.so"
    subprocess.run(["gcc", "-std=c99", "-O1", "-fPIC", "-shared", "-ffp-contract=off", str(src), "-o", str(ref_so)],
                   check=True)
    ref = ctypes.CDLL(str(ref_so))
    ptr = ctypes.POINTER(ctypes.c_double)
    rng = np.random.default_rng(3)
    monkeypatch.setenv("TRANSPILE_DROPIN_HOST", "0")
    for m, n in ((12, 14), (7, 9), (12, 5)):
        data = rng.random((14, 12))
        corr = np.full((12, 12), -7.25)
        want = corr.copy()
        ref.kernel_corr(ctypes.c_int(m), ctypes.c_int(n), data.ctypes.data_as(ptr), want.ctypes.data_as(ptr))
        before = lib.h2d_bytes()
        run = lib.run("kernel_corr", m, n, data, corr, restype=None)
        assert run.ok, run.diagnostics
        assert run.launches > 0
        crossed = lib.h2d_bytes() - before
        data_box = ((n - 1) * 12 + m) * 8
        corr_box = ((m - 1) * 12 + m) * 8
        assert crossed == (data_box if m == 12 else data_box + corr_box), (m, n, crossed)
        np.testing.assert_allclose(corr, want, rtol=1e-12, atol=1e-14, err_msg=f"m={m}, n={n}")


def test_a_condition_on_a_local_keeps_the_copy_in() -> None:
    """``full_when`` over a top-level local (a parameter of the analysis) cannot be tested where the
    drop-in decides its copies, before the body runs: the copy-in stays; over parameters it is used."""
    from transpile.cuda import host

    def fp(names: dict[str, int]) -> footprint.Footprint:
        return footprint.Footprint("corr", read=True, written=True, box=((None, None),), write_box=((None, None),),
                                   must_write=False, full_when=((Affine.of(names, -12), "=="),))

    assert host.skip_copy_in_when(fp({"mm": 1}), {"m", "n"}) is None
    assert host.skip_copy_in_when(fp({"m": 1}), {"m", "n"}) == ((Affine.of({"m": 1}, -12), "=="),)

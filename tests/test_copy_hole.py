"""A drop-in's copy-in leaves out the hole of an array: a box its kernels write before they read any
of it (passes/footprint.py ``_hole``, the runtime's ``transpile_dropin_in_holed``, docs/dropin.md
"The hole").  jacobi-2d's ``B`` needs only its boundary ring from the host."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from passes import footprint
from passes.accesses import Affine
from transpile import cuda, frontend, pipeline
from transpile.sim import SimLibrary, build

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the simulator needs g++")

JACOBI = r"""
void stencil(int tsteps, int n, double A[n][n], double B[n][n])
{
  for (int t = 0; t < tsteps; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        B[i][j] = 0.2 * (A[i][j] + A[i][j - 1] + A[i][j + 1] + A[i + 1][j] + A[i - 1][j]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        A[i][j] = 0.2 * (B[i][j] + B[i][j - 1] + B[i][j + 1] + B[i + 1][j] + B[i - 1][j]);
  }
}
"""

HEAT = r"""
void heat(int n, double A[n][n][n], double B[n][n][n])
{
  for (int t = 1; t <= 3; t++) {
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          B[i][j][k] = 0.125 * (A[i + 1][j][k] - 2.0 * A[i][j][k] + A[i - 1][j][k]) + A[i][j][k]
                     + 0.125 * (A[i][j][k + 1] + A[i][j][k - 1] + A[i][j + 1][k] + A[i][j - 1][k]);
    for (int i = 1; i < n - 1; i++)
      for (int j = 1; j < n - 1; j++)
        for (int k = 1; k < n - 1; k++)
          A[i][j][k] = 0.125 * (B[i + 1][j][k] - 2.0 * B[i][j][k] + B[i - 1][j][k]) + B[i][j][k]
                     + 0.125 * (B[i][j][k + 1] + B[i][j][k - 1] + B[i][j + 1][k] + B[i][j - 1][k]);
  }
}
"""

# Each must keep B copied in whole: an interior element is read before the kernel writes it.
NO_HOLE = {
    "accumulates": JACOBI.replace("B[i][j] = 0.2 *", "B[i][j] += 0.2 *"),
    "conditional": JACOBI.replace("        B[i][j] = 0.2", "        if (A[i][j] > 0.0) B[i][j] = 0.2"),
    "read_first": JACOBI.replace("  for (int t = 0;", "  A[1][1] = B[2][2];\n  for (int t = 0;"),
}


def _fp(tmp_path: Path, text: str, name: str = "k") -> dict[str, footprint.Footprint]:
    path = tmp_path / f"{name}.c"
    path.write_text(text)
    return footprint.analyze(pipeline.lower(frontend.load(path)).kernels[0])


def _aff(coeffs: dict[str, int], const: int) -> Affine:
    return Affine.of(coeffs, const)


def test_jacobi_hole_is_the_interior_when_a_step_runs(tmp_path: Path) -> None:
    fps = _fp(tmp_path, JACOBI)
    inner = (_aff({}, 1), _aff({"n": 1}, -2))
    assert fps["B"].hole == (inner, inner)
    assert fps["B"].hole_when is not None and (_aff({"tsteps": 1}, -1), ">=") in fps["B"].hole_when
    assert fps["A"].hole is None  # A's interior is read before the first write


def test_a_constant_step_count_needs_no_condition(tmp_path: Path) -> None:
    fp = _fp(tmp_path, HEAT)["B"]
    assert fp.hole is not None and len(fp.hole) == 3 and fp.hole_when == ()  # (empty for n < 3: checked at run time)


@pytest.mark.parametrize("name", sorted(NO_HOLE))
def test_no_hole_where_an_element_may_be_read_first(tmp_path: Path, name: str) -> None:
    assert NO_HOLE[name] != JACOBI
    assert _fp(tmp_path, NO_HOLE[name], name)["B"].hole is None


def _jacobi(tsteps: int, a: np.ndarray, b: np.ndarray) -> None:
    for _ in range(tsteps):
        b[1:-1, 1:-1] = 0.2 * (a[1:-1, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] + a[2:, 1:-1] + a[:-2, 1:-1])
        a[1:-1, 1:-1] = 0.2 * (b[1:-1, 1:-1] + b[1:-1, :-2] + b[1:-1, 2:] + b[2:, 1:-1] + b[:-2, 1:-1])


def _heat(a: np.ndarray, b: np.ndarray) -> None:
    def step(x: np.ndarray, y: np.ndarray) -> None:
        c = x[1:-1, 1:-1, 1:-1]
        y[1:-1, 1:-1, 1:-1] = (0.125 * (x[2:, 1:-1, 1:-1] - 2.0 * c + x[:-2, 1:-1, 1:-1]) + c
                               + 0.125 * (x[1:-1, 1:-1, 2:] + x[1:-1, 1:-1, :-2] + x[1:-1, 2:, 1:-1]
                                          + x[1:-1, :-2, 1:-1]))
    for _ in range(3):
        step(a, b)
        step(b, a)


def _lib(tmp_path: Path, text: str, name: str, flags: tuple[str, ...] = ()) -> SimLibrary:
    src = tmp_path / f"{name}.c"
    src.write_text(text)
    cu = tmp_path / f"{name}.cu"
    cu.write_text(cuda.emit(pipeline.lower(frontend.load(src)), source=src.name))
    lib = SimLibrary(build(cu, tmp_path / "sim", extra_flags=("-U_FORTIFY_SOURCE", *flags)))
    lib.set_quiet(True)
    return lib


def _in_bytes(err: str) -> list[int]:
    return [json.loads(ln[len("transpile-trace "):])["in_bytes"] for ln in err.splitlines()
            if ln.startswith("transpile-trace ")]


@needs_gxx
@pytest.mark.parametrize("first, rows", [("pageable", 16), ("full", 16), ("pageable", 1000)])
def test_jacobi_copies_in_only_the_ring(tmp_path: Path, first: str, rows: int, monkeypatch: pytest.MonkeyPatch,
                                        capfd: pytest.CaptureFixture[str]) -> None:
    """Fresh device memory is NaN (the simulator's fill): an element of the hole read before the kernel
    wrote it would spread NaN.  The trace's byte count shows what crossed: the ring where the strided
    copy between the hole's rows has at most TRANSPILE_HOLE_MAX_PAGEABLE_ROWS rows (the arrays are
    pageable), else all of B."""
    monkeypatch.setenv("TRANSPILE_DROPIN_TRACE", "1")
    monkeypatch.setenv("TRANSPILE_DROPIN_FIRST", first)
    monkeypatch.setenv("TRANSPILE_DROPIN_HOST", "0")
    lib = _lib(tmp_path, JACOBI, "stencil", (f"-DTRANSPILE_HOLE_MAX_PAGEABLE_ROWS={rows}",))
    rng = np.random.default_rng(7)
    capfd.readouterr()
    cases = ((2, 9), (0, 9), (1, 3), (3, 2), (1, 30), (2, 9))
    for tsteps, n in cases:
        a, b = rng.uniform(-1, 1, (n, n)), rng.uniform(-1, 1, (n, n))
        want_a, want_b = a.copy(), b.copy()
        _jacobi(tsteps, want_a, want_b)
        run = lib.run("stencil", tsteps, n, a, b, restype=None)
        assert run.ok and not run.diagnostics, run.diagnostics
        np.testing.assert_allclose(a, want_a, rtol=1e-12, atol=1e-14, err_msg=f"A tsteps={tsteps} n={n}")
        np.testing.assert_allclose(b, want_b, rtol=1e-12, atol=1e-14, err_msg=f"B tsteps={tsteps} n={n}")
    got = _in_bytes(capfd.readouterr().err)
    ring = {n: n * n - (n - 2) ** 2 for _, n in cases}
    # A whole; B: its ring where a step runs and the hole is at least half the range, else whole
    holed = [t >= 1 and 2 * (n - 2) ** 2 >= n * n and n - 3 <= rows for t, n in cases]
    want = [8 * (n * n + (ring[n] if h else n * n)) for (t, n), h in zip(cases, holed)]
    assert got == want
    assert want[0] < 8 * 2 * 81  # the ring is copied, not the whole of B
    assert (want[4] < 8 * 2 * 900) == (rows >= 27)  # n = 30: 27 strided rows


@needs_gxx
@pytest.mark.parametrize("blocks", [4, 64])
def test_a_three_dimensional_hole_goes_block_by_block(tmp_path: Path, blocks: int, monkeypatch: pytest.MonkeyPatch,
                                                      capfd: pytest.CaptureFixture[str]) -> None:
    """heat-3d's B: a block per plane of the hole (8 at n = 10); past TRANSPILE_HOLE_MAX_BLOCKS the
    range is copied whole."""
    monkeypatch.setenv("TRANSPILE_DROPIN_TRACE", "1")
    monkeypatch.setenv("TRANSPILE_DROPIN_HOST", "0")
    lib = _lib(tmp_path, HEAT, "heat", (f"-DTRANSPILE_HOLE_MAX_BLOCKS={blocks}",))
    rng = np.random.default_rng(3)
    capfd.readouterr()
    for n in (10, 4, 10):
        a, b = rng.uniform(-1, 1, (n, n, n)), rng.uniform(-1, 1, (n, n, n))
        want_a, want_b = a.copy(), b.copy()
        _heat(want_a, want_b)
        run = lib.run("heat", n, a, b, restype=None)
        assert run.ok and not run.diagnostics, run.diagnostics
        np.testing.assert_allclose(a, want_a, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(b, want_b, rtol=1e-12, atol=1e-14)
    whole = 8 * 2 * 1000
    holed = 8 * (1000 + 1000 - 512)
    assert _in_bytes(capfd.readouterr().err) == [holed if blocks >= 8 else whole, 8 * 2 * 64,
                                                   holed if blocks >= 8 else whole]

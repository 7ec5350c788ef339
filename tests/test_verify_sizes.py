"""Sizes an adversary cannot key on (transpile/verify/synth.py: drawn shapes): over the seeds every
residue mod 4 and mod 32 comes up, sizes above 1024 and primes do, the draw is deterministic given the
seed and stays within fixed extents, and a kernel wrong only off a fixed list of sizes
(tests/adversary/front/gemm_size_keyed.cu) is rejected by the default verification."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from transpile import frontend
from transpile.verify import Options, verify_file
from transpile.verify.signature import kernel_sig
from transpile.verify.synth import PRIMES, shapes

ROOT = Path(__file__).resolve().parent.parent
GEMM = ROOT / "tests" / "kernels" / "gemm.c"
ADVERSARY = ROOT / "tests" / "adversary" / "front"


def _sizes(mode: str, seeds: range, budget: float) -> list[dict[str, int]]:
    k = frontend.load(GEMM).kernels[0]
    sig = kernel_sig(k)
    return [dict(s.scalars) for seed in seeds for s in shapes(sig, k, mode=mode, work_budget=budget, seed=seed)
            if s.label == "drawn" or s.label.startswith("long-")]


def test_drawn_sizes_cover_residues_long_sides_and_primes() -> None:
    quick = _sizes("quick", range(64), 2e5)
    values = [v for s in quick for v in s.values()]
    assert {v % 4 for v in values} == set(range(4)) and {v % 32 for v in values} == set(range(32))
    assert any(v in PRIMES and v > 3 for v in values)
    assert quick == _sizes("quick", range(64), 2e5), "deterministic given the seed"
    assert quick != _sizes("quick", range(64, 128), 2e5)
    for seed in range(4):  # every size parameter gets a long side in every full run
        full = _sizes("full", range(seed, seed + 1), 3e6)
        assert all(any(s[name] > 1024 for s in full) for name in ("ni", "nj", "nk")), (seed, full)


def test_drawn_sizes_stay_within_fixed_extents(tmp_path: Path) -> None:
    src = tmp_path / "fixed.c"
    src.write_text("void k(int n, int m, double A[100][1500]) {\n  for (int i = 0; i < n; i++)\n"
                   "    for (int j = 0; j < m; j++)\n      A[i][j] *= 2.0;\n}\n")
    k = frontend.load(src).kernels[0]
    sig = kernel_sig(k)
    assert sig.size_params == ("n", "m")
    drawn = [s.scalars for seed in range(32) for s in shapes(sig, k, mode="full", work_budget=3e6, seed=seed)]
    assert all(s["n"] <= 100 and s["m"] <= 1500 for s in drawn)
    assert any(s["m"] > 1024 for s in drawn)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="needs g++ and gcc")
def test_a_kernel_keyed_on_the_old_size_list_is_rejected() -> None:
    cheat = ADVERSARY / "gemm_size_keyed.cu"
    assert "against: ../../kernels/gemm.c" in cheat.read_text()
    report = verify_file(cheat, GEMM, options=Options(seed=7, stages="abc", gpu=False))
    assert report.verdict == "fail", report.summary()
    assert report.failure.key == "c" and report.failure.check == "unwritten-output", report.summary()  # type: ignore[union-attr]


def test_a_skipped_shape_is_tried_the_other_way_round(tmp_path: Path) -> None:
    """A shape the reference cannot be tested at (a QR of a wide matrix is rank-deficient: gramschmidt
    at ``m < n`` is skipped as ill-conditioned) is tried with its sizes reversed, within the extents;
    a square shape, or one whose reversal leaves the extents' limits unchanged, has none."""
    from transpile.verify.synth import Shape, reordered_shapes

    src = tmp_path / "fixed.c"
    src.write_text("void k(int m, int n, double A[40][100]) {\n  for (int i = 0; i < m; i++)\n"
                   "    for (int j = 0; j < n; j++)\n      A[i][j] *= 2.0;\n}\n")
    k = frontend.load(src).kernels[0]
    sig = kernel_sig(k)
    (got,) = reordered_shapes(sig, k, Shape("non-square", {"m": 17, "n": 33}), work_budget=2e5)
    assert dict(got.scalars) == {"m": 33, "n": 17} and got.label == "non-square-reversed"
    (got,) = reordered_shapes(sig, k, Shape("drawn", {"m": 2, "n": 58}), work_budget=2e5)
    assert dict(got.scalars) == {"m": 40, "n": 2}  # m stays within its extent
    assert reordered_shapes(sig, k, Shape("n=3", {"m": 3, "n": 3}), work_budget=2e5) == []
    assert reordered_shapes(sig, k, Shape("big", {"m": 17, "n": 33}), work_budget=10) == []
    three = tmp_path / "range.c"
    three.write_text("void k(int n, int lo, int hi, float a[n], float b[n]) {\n"
                     "  for (int i = lo; i < hi && i < n; i++)\n    a[i] = b[i];\n}\n")
    k = frontend.load(three).kernels[0]
    got = reordered_shapes(kernel_sig(k), k, Shape("non-square", {"n": 17, "lo": 33, "hi": 9}), work_budget=2e5)
    assert [dict(s.scalars) for s in got] == [{"n": 9, "lo": 33, "hi": 17}, {"n": 9, "lo": 17, "hi": 33},
                                            {"n": 33, "lo": 9, "hi": 17}]  # the last runs i = 9..16


def test_a_shape_that_tests_nothing_has_alternates(tmp_path: Path) -> None:
    """``if (!flag)`` around the loop at the shapes' ``flag = 2`` leaves every output unchanged (a ghost shape):
    the alternates give the integers that are not sizes 0 and 1, and reverse the sizes; an integer the
    front end checks before the loops (a run-time step) keeps its value."""
    from transpile.verify.synth import Shape, alternates

    src = tmp_path / "skip.c"
    src.write_text("void k(int n, int m, int flag, float a[n], float b[n]) {\n  if (!flag)\n"
                   "    for (int i = 0; i + m < n; i++)\n      a[i] = b[i];\n}\n")
    k = frontend.load(src).kernels[0]
    sig = kernel_sig(k)
    got = alternates(sig, k, Shape("non-square", {"n": 17, "m": 33, "flag": 2}), work_budget=2e5)
    assert [dict(s.scalars) for s in got] == [{"n": 33, "m": 17, "flag": 2}, {"n": 17, "m": 33, "flag": 0},
                                            {"n": 17, "m": 33, "flag": 1}]
    step = tmp_path / "step.c"
    step.write_text("void k(int n, int inc, float a[n]) {\n  for (int i = 0; i < n; i += inc)\n    a[i] = 1.0f;\n}\n")
    k = frontend.load(step).kernels[0]
    assert alternates(kernel_sig(k), k, Shape("n=3", {"n": 3, "inc": 2}), work_budget=2e5) == []

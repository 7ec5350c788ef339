"""Launch forms in the IR (issue 42, item 2): decided by passes/launch_forms.py, written by the text
form, held to their structure by the checker, read by the back end."""

from __future__ import annotations

from pathlib import Path

import pytest

from passes import launch_forms, tile
from transpile import cuda, frontend, ir, pipeline
from transpile.diagnostics import TranspileError
from transpile.ir import check as ircheck
from transpile.ir import text

KERNELS = Path(__file__).resolve().parent / "kernels"

ROWS = """kernel k(i32 n, in f64 A[n][n], inout f64 y[n]) {
  launch%s {
    for i in 0..n par(x) {
      y[i] = 0.0;
      for j in 0..n reduce(+) {
        y[i] += A[i][j];
      }
    }
  }
}
"""


def _forms(module: ir.Module) -> list[ir.LaunchForm | None]:
    return [n.form for k in module.kernels for n in ir.statements(k) if isinstance(n, ir.Launch)]


@pytest.mark.parametrize("form", list(ir.LaunchForm))
def test_the_text_form_writes_and_reads_every_form(form: ir.LaunchForm) -> None:
    src = ROWS % f"[{form.value}]"
    module = text.parse(src)
    assert _forms(module) == [form]
    assert text.show(module) == src
    assert text.parse(text.show(module)) == module


def test_an_unknown_form_is_a_located_error() -> None:
    with pytest.raises(TranspileError) as info:
        text.parse(ROWS % "[fast]", "f.ir")
    assert info.value.headline.startswith("f.ir:2:10: error: unknown launch form 'fast' (one of serial, plain")


@pytest.mark.parametrize(("form", "why"), [
    ("serial", "it has 'par' loops"),
    ("plain", None),
    ("rows", None),
    ("rowprog", "its reductions are of the rows form"),
    ("cols", "its reductions are of the rows form"),
    ("block", "its reductions are of the rows form"),
    ("grid", "its reductions are of the rows form"),
])
def test_the_checker_holds_a_form_to_its_structure(form: str, why: str | None) -> None:
    module = text.parse(ROWS % f"[{form}]", "f.ir")
    if why is None:
        ircheck.check(module)
        return
    with pytest.raises(TranspileError) as info:
        ircheck.check(module)
    assert info.value.headline.startswith(f"f.ir:2:3: error: invalid IR: launch form '{form}' does not fit this launch: {why}")


def test_a_grid_reduction_in_a_host_loop_is_refused() -> None:
    src = """kernel k(i32 n, in f64 y[n], inout f64 s[1]) {
  for t in 0..4 {
    launch[grid] {
      for j in 0..n reduce(+) {
        s[0] += y[j];
      }
    }
  }
}
"""
    with pytest.raises(TranspileError, match="a grid reduction runs outside host loops"):
        ircheck.check(text.parse(src))
    ircheck.check(text.parse(src.replace("[grid]", "[block]")))


def test_the_pass_returns_the_kernel_when_every_form_stays() -> None:
    (k,) = text.parse(ROWS % "").kernels
    formed = launch_forms.run(k)
    assert formed is not k and _forms(ir.Module((), (formed,))) == [ir.LaunchForm.ROWS]
    assert launch_forms.run(formed) is formed


def test_a_wrong_form_in_the_input_is_decided_again() -> None:
    (k,) = text.parse(ROWS % "[plain]").kernels
    assert _forms(ir.Module((), (launch_forms.run(k),))) == [ir.LaunchForm.ROWS]


def _lowered(name: str, tiling: tile.Options | None = None) -> ir.Module:
    return pipeline.lower(frontend.load(KERNELS / f"{name}.c"), tiling=tiling)


@pytest.mark.parametrize("name", ["gemm", "atax", "durbin", "jacobi_2d", "correlation", "doitgen", "nussinov"])
def test_the_back_end_prints_the_forms_the_pipeline_recorded(name: str) -> None:
    lowered = _lowered(name)
    forms = _forms(lowered)
    assert forms and None not in forms
    shapes = [li.shape for li in cuda.launches(lowered)]
    # tensor cores are the tiled form's instruction selection on the target
    assert [("tiled" if s == "mma" else s) for s in shapes] == [f.value for f in forms]  # type: ignore[union-attr]


def test_emission_under_other_options_decides_the_forms_again() -> None:
    lowered = _lowered("gemm")
    assert ir.LaunchForm.TILED in _forms(lowered)
    off = tile.Options(enabled=False)
    assert {li.shape for li in cuda.launches(lowered, tiling=off)} == {"plain"}
    assert ir.LaunchForm.TILED not in _forms(_lowered("gemm", off))


LOOP = """kernel k(i32 T, i32 n, inout f64 A[n], inout f64 B[n]) {
  for t in 0..T%s {
    launch[plain] {
      for i in 0..n par(x) {
        B[i] = A[i] * 0.5;
      }
    }
    launch%s {
      for i in 0..n par(x) {
        A[i] = B[i] + 1.0;
      }
    }
  }
}
"""


def test_a_host_loop_s_schedule_is_decided_written_and_checked() -> None:
    (k,) = text.parse(LOOP % ("", "")).kernels
    formed = launch_forms.run(k)
    shown = text.show(ir.Module((), (formed,)))
    assert "for t in 0..T host(oneblock) {" in shown
    assert text.parse(shown) == ir.Module((), (formed,))
    # the naive mapping keeps one launch an iteration
    assert "host(" not in text.show(ir.Module((), (launch_forms.run(k, options=tile.Options(enabled=False)),)))
    # a loop one block cannot run, a launch inside a launch's loop, an unknown schedule: refused
    with pytest.raises(TranspileError, match="one block runs only a body of launches whose par loops hold no loop"):
        ircheck.check(text.parse((LOOP % (" host(oneblock)", "[rows]")).replace(
            "A[i] = B[i] + 1.0;", "A[i] = 0.0;\n        for j in 0..n reduce(+) {\n          A[i] += B[j];\n        }")))
    with pytest.raises(TranspileError, match="unknown host loop schedule 'fast'"):
        text.parse(LOOP % (" host(fast)", ""))
    ircheck.check(text.parse(LOOP % (" host(oneblock)", "[plain]")))

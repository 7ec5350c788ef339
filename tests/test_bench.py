"""bench/roofline.py and bench/gpu.py without a GPU: the model, the table, the picture and the report."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import roofline as R  # noqa: E402

from tests.polybench import SPECS  # noqa: E402

HAVE_MPL = importlib.util.find_spec("matplotlib") is not None


def test_every_kernel_has_sizes_and_a_model_in_c_order() -> None:
    assert set(R.SIZES) == set(SPECS) == set(R.MODEL)
    for k, sets in R.SIZES.items():
        names = [p.name for p in SPECS[k].params if p.kind == "size"]
        for s in sets:
            assert list(s) == names, k
        for label, sizes in R.plan_sizes(k).items():
            assert R.flops(k, sizes) > 0 and R.nbytes(k, sizes) > 0, (k, label)
            assert R.depth(k, sizes) >= 1
    assert set(R.BIG) == set(R.MEMORY_BOUND)
    for k, sizes in R.BIG.items():  # past the L2 many times over
        assert R.nbytes(k, {**sizes, **{t: 1 for t in R.TIME_PARAMS if t in sizes}}) > 8 * R.L2_BYTES, k


def test_model_values() -> None:
    g = {"ni": 2000, "nj": 2300, "nk": 2600}
    assert R.flops("gemm", g) == 2 * 2000 * 2300 * 2600 + 2 * 2000 * 2300
    assert R.nbytes("gemm", g) == 8 * (2000 * 2600 + 2600 * 2300 + 2 * 2000 * 2300)
    assert R.depth("gemm", g) == 2600
    assert R.nbytes("jacobi-2d", {"tsteps": 10, "n": 100}) == 32 * 10 * 100 * 100
    assert R.intensity("atax", {"m": 1000, "n": 1000}) == pytest.approx(0.5, rel=0.01)
    assert R.MODEL["floyd-warshall"].integer
    assert "`2*ni*nj*nk + 2*ni*nj`" in R.model_table()


def test_off_grid_sizes_are_odd_and_time_steps_capped() -> None:
    p = R.plan_sizes("gemm")
    assert p["EX"] == {"ni": 2000, "nj": 2300, "nk": 2600}
    assert all(v % 2 for lab in ("off1", "off2") for v in p[lab].values())
    assert p["off1"] != p["off2"]
    j = R.plan_sizes("jacobi-2d")
    assert j["off1"]["tsteps"] == R.OFF_GRID_TSTEPS and j["off1"]["n"] % 2
    cut = R.reduced_steps("adi", j["EX"] | {"n": 4000}, cap_s=60, cpu_rate=1e9)
    assert 2 <= cut["tsteps"] < 1000 and cut["n"] == 4000
    assert R.reduced_steps("gemm", p["EX"], cap_s=60, cpu_rate=1e9) == p["EX"]


def _records() -> list[dict]:
    g = {"ni": 2000, "nj": 2300, "nk": 2600}
    a = {"m": 1800, "n": 2200}
    return [
        {"type": "device", "device": "Test GPU", "date": "2026-12-03", "copy_bytes_per_s": 4.0e12,
         "dgemm": [{"shape": "4096x4096x4096", "flops_per_s": 50e12}, {"shape": "1000x1200x1100",
                                                                       "flops_per_s": 30e12}]},
        {"type": "time", "kernel": "gemm", "variant": "default", "label": "EX", "sizes": g, "ms": 1.0, "samples": 20},
        {"type": "time", "kernel": "gemm", "variant": "naive", "label": "EX", "sizes": g, "ms": 10.0, "samples": 20},
        {"type": "time", "kernel": "gemm", "variant": "cublas", "label": "EX", "sizes": g, "ms": 0.5, "samples": 20},
        {"type": "time", "kernel": "atax", "variant": "default", "label": "EX", "sizes": a, "ms": 0.01, "samples": 20},
        {"type": "time", "kernel": "atax", "variant": "naive", "label": "EX", "sizes": a, "ms": 0.02, "samples": 20},
        {"type": "check", "kernel": "gemm", "variant": "default", "label": "EX", "verdict": "pass"},
        {"type": "check", "kernel": "gemm", "variant": "default", "label": "off1", "verdict": "FAIL"},
        {"type": "cpu", "kernel": "gemm", "label": "EX", "sizes": g, "seconds": 5.0},
        {"type": "cpu", "kernel": "atax", "label": "off1", "sizes": {"m": 900, "n": 1100}, "seconds": 0.001},
        {"type": "error", "kernel": "lu", "message": "GPU child exit -9"},
    ]


def test_rows_and_table() -> None:
    recs = _records()
    ceil = R.ceilings(recs)
    assert ceil.device == "Test GPU" and ceil.dgemm == 50e12 and ceil.copy_bw == 4e12
    rs = R.rows(recs)
    by = {r.kernel: r for r in rs}
    assert [r.kernel for r in rs] == ["atax", "gemm", "lu"]  # PolyBench order; lu from its error alone
    assert by["gemm"].gflops() == pytest.approx(R.flops("gemm", by["gemm"].sizes) / 1e-3 / 1e9)
    assert by["atax"].cpu_estimated and not by["gemm"].cpu_estimated  # atax scaled from a smaller run
    table = R.markdown_table(rs, ceil)
    lines = table.splitlines()
    assert lines[0] == R.HEADER and len(lines) == 5
    assert all(ln.count("|") == R.HEADER.count("|") for ln in lines)
    gemm = next(ln for ln in lines if ln.startswith("| gemm"))
    assert "| fp64 |" in gemm and "| 10x |" in gemm and "| 0.50 |" in gemm and "pass, FAIL, -" in gemm
    assert "5e+03x" in gemm  # 5 s of gcc over 1 ms
    atax = next(ln for ln in lines if ln.startswith("| atax"))
    assert "| mem |" in atax and "(est)" in atax
    summ = R.summary(rs, ceil)
    assert "4000 GB/s" in summ and "50.0 TFLOP/s" in summ
    failed_line, untimed_line = summ.splitlines()[-2:]
    assert "gemm" in failed_line and failed_line.startswith("- Kernels with a correctness check not passed")
    assert untimed_line.endswith(": lu.")  # lu has only an error record: not timed, not checked


def test_html_report_embeds_picture_and_table() -> None:
    recs = _records()
    rs, ceil = R.rows(recs), R.ceilings(recs)
    page = R.html_report("t", b"\x89PNG fake", R.markdown_table(rs, ceil), R.summary(rs, ceil))
    assert "data:image/png;base64," in page and "<td>gemm</td>" in page and page.count("<tr>") == 4
    assert "no picture" in R.html_report("t", None, "")


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib not installed (pip install -e .[bench])")
def test_plot_from_jsonl(tmp_path: Path) -> None:
    import gpu

    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in _records()) + "\n")
    gpu.plot_from(jsonl, tmp_path, "x")
    assert (tmp_path / "x.png").read_bytes()[:4] == b"\x89PNG"
    assert "data:image/png;base64," in (tmp_path / "x.html").read_text()


def test_cli_helpers() -> None:
    import gpu

    assert gpu.R.parse_kernels("fdtd_2d,gemm") == ["fdtd-2d", "gemm"]
    assert len(gpu.R.parse_kernels(None)) == 30
    with pytest.raises(SystemExit):
        gpu.R.parse_kernels("nope")
    report = ("ptxas info    : Compiling entry function '_Z4tiledPd' for 'sm_90'\n"
              "ptxas info    : Function properties for _Z4tiledPd\n"
              "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
              "ptxas info    : Used 72 registers, used 1 barriers, 16640 bytes smem, 380 bytes cmem[0]\n"
              "ptxas info    : Compiling entry function '_Z5naivePd' for 'sm_90'\n"
              "ptxas info    : Function properties for _Z5naivePd\n"
              "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
              "ptxas info    : Used 40 registers, used 0 barriers, 380 bytes cmem[0]\n")
    assert gpu.ptxas_summary(report) == "2k 72r 16640B SPILL"
    assert gpu.outputs_of("gemm", {"C": "inout", "A": "in", "B": "in"}) == ["C"]
    assert gpu.outputs_of("gemm", None) == ["C", "A", "B"]

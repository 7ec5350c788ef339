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


def test_discover_candidates_and_bad_names(tmp_path: Path) -> None:
    import gpu

    for name in ("gemm.cu", "gemm.naive.cu", "gemm.cand-t32.cu", "gemm.cand-mma_x2=1.cu", "gemm.cand-bad+name.cu",
                 "gemm.cand.cu", "gemm.cand-.cu", "gemm.cand-x.cu.bak", "fdtd-2d.cand-x.cu", "fdtd_2d.cu",
                 "fdtd_2d.cand-ok.cu", "atax.cand-a.cu"):
        (tmp_path / name).write_text("// x\n")
    files, errors = gpu.discover(tmp_path, ["fdtd-2d", "gemm"])
    assert list(files["gemm"]) == ["default", "naive", "cand-mma_x2=1", "cand-t32"]
    assert files["gemm"]["cand-t32"] == tmp_path / "gemm.cand-t32.cu"
    assert list(files["fdtd-2d"]) == ["default", "naive", "cand-ok"]  # atax's is not asked for: no build, no error
    assert sorted(e["file"] for e in errors) == ["fdtd-2d.cand-x.cu", "gemm.cand-.cu", "gemm.cand-bad+name.cu",
                                                 "gemm.cand.cu"]
    assert all(e["type"] == "error" and R.is_candidate(e["variant"]) for e in errors)
    assert next(e for e in errors if e["file"] == "fdtd-2d.cand-x.cu")["kernel"] == ""
    skip, _ = gpu.discover(tmp_path, ["gemm"], naive=False)
    assert list(skip["gemm"]) == ["default", "cand-mma_x2=1", "cand-t32"]


def test_time_share_counts_every_build() -> None:
    import gpu

    assert gpu.timing_configs("gemm", ["EX"], 4) == 5  # + cuBLAS
    assert gpu.timing_configs("gemm", ["EX"], 3, cublas=False) == 3  # a candidates child
    assert gpu.timing_configs("atax", ["EX", "BIG"], 3) == 6
    assert gpu.share_of(100.0, [2, 2, 2, 2]) == 25.0  # no candidates: the even split per kernel
    assert gpu.share_of(120.0, [1, 3, 2]) == 20.0  # opt alone (--skip-naive), then 3 candidates, ...
    assert gpu.share_of(100.0, [3, 2]) == 60.0
    assert gpu.share_of(10.0, [1, 9]) == 8.0  # the floor


def _cand_records() -> list[dict]:
    g = {"ni": 2000, "nj": 2300, "nk": 2600}
    a = {"m": 1800, "n": 2200}
    recs = [r for r in _records() if r.get("variant") != "naive"]
    recs = [r for r in recs if not (r["type"] == "check" and r["kernel"] == "gemm")]
    recs.append({"type": "cpu", "kernel": "gemm", "label": "off2", "sizes": {"ni": 199}, "seconds": 0.1})
    recs.append({"type": "cpu", "kernel": "atax", "label": "EX", "sizes": a, "seconds": 0.1})
    for v, ms, verdicts in (("default", 1.0, ("pass", "pass")), ("cand-wrong", 0.4, ("pass", "FAIL")),
                            ("cand-b", 0.8, ("pass", "pass")), ("cand-unchecked", 0.5, ("pass", None)),
                            ("cand-c", 0.9, ("pass", "pass"))):
        if v != "default":
            recs.append({"type": "time", "kernel": "gemm", "variant": v, "label": "EX", "sizes": g, "ms": ms})
        for label, verdict in zip(("EX", "off2"), verdicts):
            if verdict:
                recs.append({"type": "check", "kernel": "gemm", "variant": v, "label": label, "verdict": verdict})
    recs += [{"type": "error", "kernel": "gemm", "variant": "cand-bad+x", "file": "gemm.cand-bad+x.cu",
              "message": "bad candidate file name"},
             {"type": "time", "kernel": "atax", "variant": "cand-slow", "label": "EX", "sizes": a, "ms": 0.03},
             {"type": "check", "kernel": "atax", "variant": "cand-slow", "label": "EX", "verdict": "pass"},
             {"type": "check", "kernel": "atax", "variant": "cand-slow", "label": "off1", "verdict": "pass"},
             {"type": "check", "kernel": "atax", "variant": "default", "label": "EX", "verdict": "FAIL"}]
    return recs


def _row(table: str, kernel: str, variant: str) -> list[str]:
    line = next(ln for ln in table.splitlines() if ln.startswith(f"| {kernel} | {variant} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_candidates_table_marks_the_fastest_passing_build() -> None:
    recs = _cand_records()
    table = R.candidates_table(recs)
    lines = table.splitlines()
    assert lines[0] == R.CAND_HEADER and all(ln.count("|") == R.CAND_HEADER.count("|") for ln in lines)
    assert [ln.split("|")[2].strip() for ln in lines[2:]] == [  # opt first, then by name; atax before gemm
        "opt", "cand-slow", "opt", "cand-b", "cand-bad+x", "cand-c", "cand-unchecked", "cand-wrong"]
    best = [ln for ln in lines if "**yes**" in ln]
    assert len(best) == 2  # one per kernel
    # no opt-again timed (records from before it was): against opt's own time, with a note
    assert _row(table, "gemm", "cand-b")[1:7] == ["cand-b", "0.8", "1.25x", R.OTHER_CHILD, "pass", "**yes**"]
    assert "no opt-again timed" in _row(table, "gemm", "cand-b")[7]
    assert _row(table, "gemm", "cand-wrong")[2:7] == ["0.4", "2.5x", R.OTHER_CHILD, "FAIL", ""]  # fastest, but wrong
    assert _row(table, "gemm", "cand-unchecked")[5:7] == ["-", ""]  # not checked at off2
    assert _row(table, "gemm", "opt")[1:8] == ["opt", "1", "1x", "", "pass", "", ""]
    assert "bad candidate file name" in _row(table, "gemm", "cand-bad+x")[7]
    assert _row(table, "gemm", "cand-bad+x")[3:5] == ["-", ""]  # untimed: no speedup, no baseline
    assert _row(table, "atax", "opt")[5:7] == ["FAIL", ""]  # a slower passing candidate beats a failing opt
    assert _row(table, "atax", "cand-slow")[3:7] == ["0.333x", R.OTHER_CHILD, "pass", "**yes**"]
    assert not any(ln.startswith("| gemm | opt-again |") for ln in lines)  # only where it was timed
    assert R.candidates_table(_records()) == ""  # no candidates, no section


def _again(recs: list[dict], baseline_ms: float, **cands: float) -> list[dict]:
    """``recs`` plus gemm's opt-again at ``baseline_ms`` and candidates (name -> ms), as a candidates
    child times them: opt's own time (1 ms, the first child's) stays as it was."""
    g = {"ni": 2000, "nj": 2300, "nk": 2600}
    out = [r for r in recs if not (r.get("kernel") == "gemm" and R.is_candidate(r.get("variant")))]
    out.append({"type": "time", "kernel": "gemm", "variant": R.BASELINE, "label": "EX", "sizes": g,
                "ms": baseline_ms, "round_robin": True})
    for v, ms in cands.items():
        out.append({"type": "time", "kernel": "gemm", "variant": f"cand-{v}", "label": "EX", "sizes": g, "ms": ms,
                    "round_robin": True})
        out += [{"type": "check", "kernel": "gemm", "variant": f"cand-{v}", "label": lab, "verdict": "pass"}
                for lab in ("EX", "off2")]
    return out


def test_candidates_are_measured_against_the_same_child_baseline() -> None:
    """The second child runs ~10% fast: opt-again (0.9 ms) and a candidate whose shape cannot matter
    (0.9 ms) tie, and a 0.95 ms candidate, "faster" than opt's 1 ms from the first child, is slower."""
    table = R.candidates_table(_again(_cand_records(), 0.9, same=0.9, slower=0.95, b=0.8))
    names = [ln.split("|")[2].strip() for ln in table.splitlines()[2:] if ln.startswith("| gemm")]
    assert names == ["opt", "opt-again", "cand-b", "cand-same", "cand-slower"]
    assert _row(table, "gemm", "opt-again")[2:7] == ["0.9", "1.11x", R.OTHER_CHILD, "as opt", ""]  # the drift
    assert _row(table, "gemm", "cand-same")[3:7] == ["1x", R.SAME_CHILD, "pass", ""]  # not 1.11x
    assert _row(table, "gemm", "cand-slower")[3:7] == ["0.947x", R.SAME_CHILD, "pass", ""]  # not 1.05x
    assert _row(table, "gemm", "cand-b")[3:7] == ["1.12x", R.SAME_CHILD, "pass", "**yes**"]  # 0.9/0.8, not 1.25x
    assert _row(table, "gemm", "cand-b")[7] == ""  # no fallback note
    # nothing beats opt in its own child: the tie goes to opt, not to the candidate that only looks 11% faster
    tie = R.candidates_table(_again(_cand_records(), 0.9, same=0.9, slower=0.95))
    assert _row(tie, "gemm", "opt")[6] == "**yes**" and _row(tie, "gemm", "cand-same")[6] == ""


def test_candidates_and_missing_naive_leave_the_main_table_alone() -> None:
    recs = _again(_cand_records(), 0.9, same=0.9)
    plain = [r for r in recs if not R.candidates_side(r.get("variant"))]
    assert any(r.get("variant") == R.BASELINE for r in recs) and R.candidates_side(R.BASELINE)
    ceil = R.ceilings(recs)
    assert R.markdown_table(R.rows(recs), ceil) == R.markdown_table(R.rows(plain), ceil)
    assert R.summary(R.rows(recs), ceil) == R.summary(R.rows(plain), ceil)
    gemm = _row(R.markdown_table(R.rows(recs), ceil), "gemm", "ni=2000 nj=2300 nk=2600")
    assert gemm[8:10] == ["-", "-"] and gemm[-1] == ""  # naive ms, vs naive; no candidate note
    assert "not measured" in R.summary(R.rows(recs), ceil)
    assert "not measured" not in R.summary(R.rows(_records()), R.ceilings(_records()))


def test_fake_run_with_candidates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole parent on BENCH_FAKE_GPU stand-ins: discovery, builds, checks, timing, shares, report.
    The candidates' child runs 10% fast (BENCH_FAKE_DRIFT): their speedups must come from the opt-again
    timed there, not from opt's time in the first child (that would give 1.5 / 0.9 = 1.67x)."""
    import gpu

    cu, out, work = tmp_path / "cu", tmp_path / "out", tmp_path / "work"
    cu.mkdir()
    (cu / "gemm.cu").write_text("// BENCH_FAKE_SLOW=1.5\n")
    (cu / "gemm.cand-fast.cu").write_text("// BENCH_FAKE_SLOW=1.0\n")
    (cu / "gemm.cand-wrong.cu").write_text("// BENCH_FAKE_WRONG BENCH_FAKE_SLOW=0.5\n")
    (cu / "gemm.cand-bad+name.cu").write_text("// x\n")
    small, odd = {"ni": 20, "nj": 30, "nk": 40}, {"ni": 21, "nj": 23, "nk": 25}
    monkeypatch.setenv("BENCH_FAKE_GPU", "1")
    monkeypatch.setenv("BENCH_FAKE_DRIFT", "0.9")
    monkeypatch.setattr(gpu, "plan", lambda kernels, args: {"gemm": {"checks": {"EX": small, "off2": odd},
                                                                     "timed": {"EX": small}}})
    monkeypatch.setattr(gpu, "nvcc_build", lambda c, d, cubin=False: (c, "") if c.exists() else (None, "no file"))
    assert gpu.main(["--cu-dir", str(cu), "--kernels", "gemm", "--quick", "--skip-naive", "--out", str(out),
                     "--work", str(work), "--budget", "300", "--cpu-jobs", "2", "--build-jobs", "2",
                     "--name", "t"]) == 0
    assert not (cu / "gemm.naive.cu").exists()  # --skip-naive: nothing generated, nothing built
    recs = [json.loads(ln) for ln in (out / "t.jsonl").read_text().splitlines()]
    verdicts = {(r["variant"], r["label"]): r["verdict"] for r in recs if r["type"] == "check"}
    assert verdicts == {("default", "EX"): "pass", ("default", "off2"): "pass", ("cand-fast", "EX"): "pass",
                        ("cand-fast", "off2"): "pass", ("cand-wrong", "EX"): "FAIL", ("cand-wrong", "off2"): "FAIL"}
    times = {r["variant"]: r for r in recs if r["type"] == "time"}
    assert sorted(times) == ["cand-fast", "cand-wrong", "cublas", "default", R.BASELINE]
    assert times[R.BASELINE]["ms"] == pytest.approx(0.9 * times["default"]["ms"])  # timed in the second child
    assert times[R.BASELINE].get("round_robin") and not times["default"].get("round_robin")
    assert not any(r["type"] == "check" and r["variant"] == R.BASELINE for r in recs)  # timed only
    assert [r["file"] for r in recs if r["type"] == "error"] == ["gemm.cand-bad+name.cu"]
    main_job = json.loads((work / "job-gpu-gemm.json").read_text())
    cand_job = json.loads((work / "job-gpu-gemm.cand.json").read_text())
    assert list(main_job["libs"]) == ["default"] and main_job["cublas"]
    assert list(cand_job["libs"]) == ["cand-fast", "cand-wrong"] and not cand_job["cublas"]
    assert cand_job["baseline"] == str(cu / "gemm.cu") and main_job.get("baseline") is None
    assert cand_job["budget_s"] > 2 * main_job["budget_s"]  # two builds to opt's one, and the last child
    md = (out / "t.md").read_text()
    section = md.split("## Candidates", 1)[1].split("## Correctness runs", 1)[0]
    assert _row(section, "gemm", "cand-fast")[3:7] == ["1.5x", R.SAME_CHILD, "pass", "**yes**"]  # not 1.67x
    assert _row(section, "gemm", "opt-again")[3:5] == ["1.11x", R.OTHER_CHILD]  # the drift, shown
    assert _row(section, "gemm", "cand-wrong")[5:7] == ["FAIL", ""]
    assert "bad candidate file name" in _row(section, "gemm", "cand-bad+name")[7]
    gemm = _row(md, "gemm", "ni=20 nj=30 nk=40")
    assert gemm[8:10] == ["-", "-"] and gemm[-1] == ""  # no naive; the candidates stay out of opt's row
    assert float(gemm[2]) == pytest.approx(times["default"]["ms"], rel=1e-2)  # opt's own time, not opt-again's


def test_round_robin_times_every_build_in_every_round() -> None:
    """``Gpu.time_round_robin`` on a stand-in cupy whose clock speeds up 2% a call: builds alternate
    (each round starting one further on), warm-up rounds are dropped, and two copies of one build get
    the same median, where timing one after the other would not."""
    import types

    import gpu

    clock = {"calls": 0, "ms": 0.0}
    order: list[str] = []

    class Event:
        def record(self, stream: object) -> None:
            pass

        def synchronize(self) -> None:
            pass

    class Stream:
        def __enter__(self) -> Stream:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def synchronize(self) -> None:
            pass

    g = gpu.Gpu.__new__(gpu.Gpu)  # no cupy here: only what time_round_robin touches
    g.cp = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event, get_elapsed_time=lambda a, b: clock["ms"]))
    g.stream = Stream()
    g.flush_buf = types.SimpleNamespace(fill=lambda v: None)

    def build(name: str, ms: float) -> object:
        def call(i: int) -> None:
            order.append(name)
            clock["ms"] = ms * 0.98 ** clock["calls"]
            clock["calls"] += 1
        return call

    calls = {"a": build("a", 1.0), "a2": build("a2", 1.0), "b": build("b", 2.0)}
    restored: list[int] = []
    got = g.time_round_robin(calls, before=restored.append, warmup=1, iters=5, budget_s=100.0)
    assert order[:9] == ["a", "a2", "b", "a2", "b", "a", "b", "a", "a2"]
    assert len(order) == 18 and restored == [i for i in range(6) for _ in range(3)]  # restored before each call
    assert {v: len(s) for v, s in got.items()} == {"a": 5, "a2": 5, "b": 5}
    import statistics

    ma, ma2 = statistics.median(got["a"]), statistics.median(got["a2"])
    assert abs(ma / ma2 - 1) < 0.03  # one build after the other, a2 would be 0.98**6: 11% faster
    assert statistics.median(got["b"]) / ma == pytest.approx(2.0, rel=0.05)
    # one round past a quarter of the budget: that round is the only sample
    order.clear()
    assert g.time_round_robin(calls, warmup=2, iters=5, budget_s=0.001) == {
        v: [pytest.approx(x)] for v, x in zip(("a", "a2", "b"), (0.98 ** 18, 0.98 ** 19, 2 * 0.98 ** 20))}


def test_evolve_speedups_use_the_same_child_baseline(tmp_path: Path) -> None:
    """bench/evolve.py: a candidate's speedup is the baseline's time over its own, both from the
    candidates' child; opt's own time (first child) only where no baseline was timed."""
    import evolve

    def jsonl(recs: list[dict]) -> Path:
        f = tmp_path / f"t{len(list(tmp_path.iterdir()))}.jsonl"
        f.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
        return f

    def time(v: str, ms: float) -> dict:
        return {"type": "time", "kernel": "gemm", "variant": v, "label": "EX", "ms": ms}

    recs = [time("default", 1.0), time(R.BASELINE, 0.9), time("cand-a", 0.9), time("cand-b", 0.85),
            {"type": "check", "kernel": "gemm", "variant": "default", "label": "EX", "verdict": "pass"}]
    manifest = {"kernels": {"gemm": {"variants": {"default": "default", "a": "cand-a", "b": "cand-b"}}}}
    model = {("gemm", "default"): 3.0, ("gemm", "cand-a"): 1.0, ("gemm", "cand-b"): 2.0}
    times = evolve.measured(jsonl(recs))
    assert times[("gemm", R.BASELINE)] == 0.9
    [row] = evolve.picks(manifest, model, times)
    assert row["baseline"] == "same child" and row["default_ms"] == 1.0
    assert row["model_pick"] == "cand-a" and row["model_pick_speedup"] == pytest.approx(1.0)  # not 1.11
    assert row["fastest"] == "cand-b" and row["fastest_speedup"] == pytest.approx(0.9 / 0.85)  # not 1.18
    c = evolve.correlations(manifest, model, times, ["gemm"])
    assert c["family"]["matmul-like"]["pairs"] == 3
    # the search's own pick (the manifest's best) is reported beside the model's; no best: the default
    assert row["search_pick"] == "default" and row["search_pick_speedup"] == 1.0
    [row] = evolve.picks({"kernels": {"gemm": {**manifest["kernels"]["gemm"], "best": "b"}}}, model, times)
    assert row["search_pick"] == "cand-b" and row["search_pick_speedup"] == pytest.approx(0.9 / 0.85)
    # an estimate within the model's margin (evolve.MODEL_MARGIN) of the default's leaves the default
    near = {**model, ("gemm", "cand-a"): 2.8, ("gemm", "cand-b"): 2.9}
    [row] = evolve.picks(manifest, near, times)
    assert row["model_pick"] == "default"
    # where the candidates tie the baseline, the default's position among them follows its own child
    tie = evolve.measured(jsonl(recs[:2] + [time("cand-a", 0.9), time("cand-b", 0.9)] + recs[4:]))
    [row] = evolve.picks(manifest, model, tie)
    assert row["fastest"] == "default" and row["fastest_speedup"] == 1.0
    # timings from before the baseline: opt's own time, labelled
    [row] = evolve.picks(manifest, model, evolve.measured(jsonl([r for r in recs if r.get("variant") != R.BASELINE])))
    assert row["baseline"] == "other child" and row["fastest_speedup"] == pytest.approx(1 / 0.85)
    # the baseline is opt's library: it fails with opt
    failed = recs + [{"type": "check", "kernel": "gemm", "variant": "default", "label": "off1", "verdict": "FAIL"}]
    assert ("gemm", R.BASELINE) not in evolve.measured(jsonl(failed))


def test_same_code_as_naive_is_never_slower_than_naive(tmp_path: Path) -> None:
    import gpu

    g = {"ni": 2000, "nj": 2300, "nk": 2600}
    recs = _records() + [
        {"type": "time", "kernel": "jacobi-1d", "variant": "default", "label": "EX",
         "sizes": {"tsteps": 1000, "n": 4000}, "ms": 8.1, "samples": 20},
        {"type": "time", "kernel": "jacobi-1d", "variant": "naive", "label": "EX",
         "sizes": {"tsteps": 1000, "n": 4000}, "ms": 7.8, "samples": 20},
        {"type": "time", "kernel": "2mm", "variant": "default", "label": "EX", "sizes": {**g, "nl": 2400},
         "ms": 2.0, "samples": 20},
        {"type": "time", "kernel": "2mm", "variant": "naive", "label": "EX", "sizes": {**g, "nl": 2400},
         "ms": 1.0, "samples": 20},
    ]
    (tmp_path / "jacobi_1d.cu").write_text("same")
    (tmp_path / "jacobi_1d.naive.cu").write_text("same")
    (tmp_path / "2mm.cu").write_text("tiled")
    (tmp_path / "2mm.naive.cu").write_text("naive")
    files, _ = gpu.discover(tmp_path, ["jacobi-1d", "2mm"])
    marks = gpu.same_code(files)
    assert marks == [{"type": "same-code", "kernel": "jacobi-1d", "variants": ["default", "naive"]}]
    rs = R.rows(recs + marks)
    summ = R.summary(rs, R.ceilings(recs))
    slower = next(ln for ln in summ.splitlines() if "slower than naive" in ln)
    assert "slower than naive: 2mm (the same code as naive, so equal up to noise: jacobi-1d)." in slower
    table = R.markdown_table(rs, R.ceilings(recs))
    assert "(same code)" in next(ln for ln in table.splitlines() if ln.startswith("| jacobi-1d"))
    assert "(same code)" not in next(ln for ln in table.splitlines() if ln.startswith("| 2mm"))


@pytest.mark.slow
def test_evolve_generate_writes_the_search_and_the_included_schedules(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import evolve as E

    E.generate(["jacobi-2d"], tmp_path, rounds=1, seed=1, cap=1, jobs=1, include=["rows=4", "rows=1"])
    manifest = json.loads((tmp_path / "evolve.json").read_text())
    entry = manifest["kernels"]["jacobi-2d"]
    assert entry["variants"]["default"] == "default" and (tmp_path / "jacobi_2d.cu").exists()
    assert entry["variants"]["rows=4"] == "cand-rows=4" and (tmp_path / "jacobi_2d.cand-rows=4.cu").exists()
    # "rows=1" is the default schedule: already tried, not written twice
    assert [t["schedule"] for t in entry["trials"]].count("default") == 1
    included = [t for t in entry["trials"] if t["origin"] == "include"]
    assert [t["schedule"] for t in included] == ["rows=4"] and included[0]["status"] == "pass"
    assert "#pragma unroll" in (tmp_path / "jacobi_2d.cand-rows=4.cu").read_text()


def test_opt_is_checked_and_timed_before_naive_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A naive build too slow for its time share (symm at EXTRALARGE) must not cost opt its timing:
    # the opt/naive child finishes opt (checks, timing, cuBLAS) before it runs naive at all.
    import gpu

    calls: list[tuple[str, ...]] = []

    class Pool:
        def free_all_blocks(self) -> None:
            pass

    class FakeGpu:
        def __init__(self) -> None:
            self.cp = type("cp", (), {"get_default_memory_pool": staticmethod(lambda: Pool())})

    monkeypatch.setattr(gpu, "Gpu", FakeGpu)
    monkeypatch.setattr(gpu, "Build", lambda kernel, lib: f"build:{Path(lib).name}")
    monkeypatch.setattr(gpu, "_check_builds", lambda g, k, spec, builds, job, work, out:
                        calls.append(("check", *builds)) or 0)
    monkeypatch.setattr(gpu, "_time_size", lambda g, k, label, sizes, builds, job, out, state:
                        calls.append(("time", label, *builds, f"cublas={job['cublas']}")))
    job = {"kernel": "gemm", "records": str(tmp_path / "r.jsonl"), "budget_s": 60, "work": str(tmp_path),
           "libs": {"default": "opt.so", "naive": "naive.so"}, "checks": {"EX": {}, "off1": {}},
           "timed": {"EX": {}}, "seed": 1}
    assert gpu.gpu_child(job) == 0
    assert calls == [("check", "default"), ("time", "EX", "default", "cublas=True"),
                     ("check", "naive"), ("time", "EX", "naive", "cublas=False")]
    calls.clear()
    cands = {**job, "libs": {"cand-a": "a.so", "cand-b": "b.so"}, "baseline": "opt.so", "cublas": False}
    assert gpu.gpu_child(cands) == 0
    assert calls == [("check", "cand-a", "cand-b"), ("time", "EX", gpu.R.BASELINE, "cand-a", "cand-b", "cublas=False")]


def test_merge_takes_each_kernel_from_the_last_run_that_has_it(tmp_path: Path) -> None:
    import gpu

    dev = {"type": "device", "device": "NVIDIA H200", "date": "d1", "copy_bytes_per_s": 4e12}
    g, a = {"ni": 2000, "nj": 2300, "nk": 2600}, {"m": 1800, "n": 2200}
    old = [dev, {"type": "time", "kernel": "gemm", "variant": "default", "label": "EX", "sizes": g, "ms": 2.0},
           {"type": "check", "kernel": "gemm", "label": "EX", "variant": "default", "verdict": "pass"},
           {"type": "time", "kernel": "atax", "variant": "default", "label": "EX", "sizes": a, "ms": 1.0}]
    new = [{**dev, "date": "d2"},
           {"type": "time", "kernel": "gemm", "variant": "default", "label": "EX", "sizes": g, "ms": 1.0}]
    merged = gpu.merge_records([old, new])
    assert [r for r in merged if r.get("kernel") == "gemm"] == new[1:]  # the old check goes too
    assert [r["ms"] for r in merged if r.get("kernel") == "atax"] == [1.0]
    assert [r["date"] for r in merged if r["type"] == "device"] == ["d1", "d2"]
    for i, run in enumerate((old, new)):
        (tmp_path / f"{i}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in run))
    assert gpu.main(["--merge", str(tmp_path / "0.jsonl"), str(tmp_path / "1.jsonl"),
                     "--out", str(tmp_path / "o"), "--name", "m"]) == 0
    text = (tmp_path / "o" / "m.md").read_text()
    assert "d2" in text.splitlines()[0] and "| gemm |" in text and "| atax |" in text
    assert len((tmp_path / "o" / "m.jsonl").read_text().splitlines()) == len(merged)


def test_two_outputs_off_by_rounding_alone_are_precision_not_fail(tmp_path: Path) -> None:
    """Without a measured FMA spread, outputs off by rounding alone (under 1e-6) are 'precision?';
    a second such output used to turn the verdict into FAIL (adi, run 47)."""
    import gpu
    import numpy as np

    (tmp_path / "ref").mkdir()
    rng = np.random.default_rng(0)
    u, q = rng.random(1000), rng.random(1000)
    np.savez(tmp_path / "ref" / "adi.EX.npz", u=u, q=q)
    cpu = {"seconds": 1.0, "sizes": {"tsteps": 2, "n": 30}, "spread": None}

    def verdict(du: float, dq: float) -> str:
        np.savez(tmp_path / "got.npz", u=u * (1 + du), q=q * (1 + dq))
        return gpu.compare_run("adi", "EX", "default", str(tmp_path / "got.npz"), cpu, tmp_path)["verdict"]

    assert verdict(0.0, 0.0) == "pass"
    assert verdict(2e-7, 0.0) == "precision?"
    assert verdict(2e-7, 2e-7) == "precision?"
    assert verdict(2e-7, 0.5) == "FAIL"

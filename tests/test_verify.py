"""The verifier (transpile/verify): every cheat in tests/cheats is rejected by the
stage and check the table names, honest kernels pass, the pipeline's output for
the 30 PolyBench kernels passes stages (a)-(c) (and scores "pass" through the evaluator's
task function), and the command line behaves."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import evaluate_helpers
from transpile import cuda, frontend, pipeline
from transpile.search.evaluate import score_submission
from transpile.toolchain import parse_ptxas
from transpile.verify import Options, verify_file, verify_module
from transpile.verify.checks import HostBuffers, compare, tolerance
from transpile.verify.proc import ChildError, fork_call, fork_stream
from transpile.verify.reference import cache_file
from transpile.verify.signature import check_dropin, find_dropin, kernel_sig
from transpile.verify.synth import POISON_BITS, make_inputs, poison, seed_for, shapes

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"
CHEATS = ROOT / "tests" / "cheats"
SEED = 2024
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")

# The cheat table (also in docs/verify.md): file, reference, the gaming pattern,
# and the stage and check that must reject it.
CHEAT_TABLE: list[tuple[str, Path, str, str, str]] = [
    ("jacobi_copy_input", KERNELS / "jacobi_2d.c", "copy input to output", "c", "mismatch"),
    ("gemm_first_tile", KERNELS / "gemm.c", "write the first tile only", "c", "unwritten-output"),
    ("gemm_mult32", KERNELS / "gemm.c", "correct only for multiples of 32", "c", "unwritten-output"),
    ("gemm_missing_sync", KERNELS / "gemm.c", "missing __syncthreads in a tiled kernel", "c", "race"),
    ("atax_off_by_one", KERNELS / "atax.c", "off-by-one guard writes past the end", "c", "device-guard"),
    ("gemm_hardcoded", KERNELS / "gemm.c", "hard-coded output for one seed", "c", "mismatch"),
    ("gemm_cached", KERNELS / "gemm.c", "result cached in a static buffer between calls", "c", "fresh-input"),
    ("dot_uninit_accumulator", CHEATS / "dot.c", "uninitialised accumulator on zero-filled memory", "c",
     "nan-output"),
    ("gemm_transposed", KERNELS / "gemm.c", "transpose that passes on symmetric inputs", "c", "mismatch"),
    ("gemm_float_acc", KERNELS / "gemm.c", "float32 accumulation of a double kernel", "c", "precision"),
    ("atax_read_before_write", KERNELS / "atax.c", "reading an output before writing it", "c", "mismatch"),
    ("gemm_skip_last_row", KERNELS / "gemm.c", "skipping the last row", "c", "unwritten-output"),
    ("gemm_other_stream", KERNELS / "gemm.c", "work on another stream without synchronisation", "c", "stream"),
    ("atax_modifies_input", KERNELS / "atax.c", "modifying an input array", "c", "input-modified"),
    ("dot_race", CHEATS / "dot.c", "race in the reduction (non-atomic +=)", "c", "block-race"),
]
HONEST = [("ok_dot", CHEATS / "dot.c"), ("ok_gemm_tiled", KERNELS / "gemm.c")]


def _opts(**kw: object) -> Options:
    base = {"seed": SEED, "stages": "abcdef", "gpu": False}
    return Options(**{**base, **kw})  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# The cheats


def test_cheat_table_is_complete() -> None:
    files = {p.stem for p in CHEATS.glob("*.cu")}
    table = {c[0] for c in CHEAT_TABLE}
    assert len(table) >= 15
    assert table | {h[0] for h in HONEST} == files, "every .cu in tests/cheats is in a table"
    for name, ref, *_ in CHEAT_TABLE:
        assert ref.exists() and (CHEATS / f"{name}.cu").exists(), name


@pytest.mark.sample(2)
@needs_gxx
@pytest.mark.parametrize(("name", "ref", "pattern", "stage", "check"), CHEAT_TABLE,
                         ids=[c[0] for c in CHEAT_TABLE])
def test_cheat_is_rejected_by_its_check(name: str, ref: Path, pattern: str, stage: str, check: str) -> None:
    report = verify_file(CHEATS / f"{name}.cu", ref, options=_opts())
    failure = report.failure
    assert failure is not None, f"{name} ({pattern}) was not rejected: {report.reason}"
    assert (failure.key, failure.check) == (stage, check), report.summary()
    assert report.verdict == "fail" and not report.ok
    assert all(report.stage(k).status == "pass" for k in "ab"), report.summary()


@needs_gxx
@pytest.mark.parametrize(("name", "ref"), HONEST, ids=[h[0] for h in HONEST])
def test_honest_kernels_pass(name: str, ref: Path) -> None:
    report = verify_file(CHEATS / f"{name}.cu", ref, options=_opts())
    assert report.ok, report.summary()
    assert [report.stage(k).status for k in "abc"] == ["pass", "pass", "pass"] or \
        report.stage("b").status == "skipped"
    assert report.stage("d").status == "skipped", "no GPU stage may pass without a GPU"


@needs_gxx
def test_device_entry_on_the_default_stream_is_rejected(tmp_path: Path) -> None:
    text = (ROOT / "tests" / "golden" / "gemm.cu").read_text()
    assert ", 0, stream>>>" in text
    cheat = tmp_path / "gemm_default_stream.cu"
    cheat.write_text(text.replace(", 0, stream>>>", ", 0, 0>>>"))
    report = verify_file(cheat, ROOT / "tests" / "ir" / "gemm.ir", options=_opts())
    assert report.failure is not None and report.failure.check == "stream", report.summary()
    # The drop-in's own run already sees it: its stream does not wait for the default stream.
    msg = report.failure.message
    assert "not on the stream passed" in msg or "on the default stream was still pending" in msg \
        or ("race on device allocation" in msg and "on the legacy default stream" in msg), msg


@needs_gxx
def test_wrong_signature_fails_stage_a(tmp_path: Path) -> None:
    text = (CHEATS / "ok_dot.cu").read_text().replace("void dot(int n, double* x,", "void dot(int n, float* x,")
    bad = tmp_path / "dot_float.cu"
    bad.write_text(text)
    report = verify_file(bad, CHEATS / "dot.c", options=_opts())
    assert report.failure is not None and (report.failure.key, report.failure.check) == ("a", "signature")
    assert "parameter 2 ('x')" in report.failure.message
    mangled = tmp_path / "dot_cpp.cu"
    mangled.write_text((CHEATS / "ok_dot.cu").read_text().replace('extern "C" void dot', "void dot"))
    report = verify_file(mangled, CHEATS / "dot.c", options=_opts())
    assert report.failure is not None and "not extern" in report.failure.message


@needs_gxx
def test_unsupported_feature_is_not_applicable_not_a_pass(tmp_path: Path) -> None:
    text = (CHEATS / "ok_dot.cu").read_text().replace("  if (t == 0) atomicAdd", '  asm volatile("");\n'
                                                      "  if (t == 0) atomicAdd")
    cu = tmp_path / "dot_asm.cu"
    cu.write_text(text)
    report = verify_file(cu, CHEATS / "dot.c", options=_opts())
    c = report.stage("c")
    assert c.status == "not applicable"
    assert c.message.startswith("stage (c) not applicable: inline PTX assembly (asm)")
    assert report.verdict == "unverified" and not report.ok


@needs_gxx
def test_crash_is_a_reported_failure(tmp_path: Path) -> None:
    text = (CHEATS / "ok_dot.cu").read_text().replace("  cudaMemset(dout, 0, sizeof(double));",
                                                      "  cudaMemset(dout, 0, sizeof(double));\n"
                                                      "  if (n > 1) *(volatile int*)0 = 1;")
    cu = tmp_path / "dot_crash.cu"
    cu.write_text(text)
    report = verify_file(cu, CHEATS / "dot.c", options=_opts())
    assert report.failure is not None and report.failure.check == "crash", report.summary()
    assert "SIGSEGV" in report.failure.message


# ---------------------------------------------------------------------------
# The pipeline's own output


PB = sorted(KERNELS.glob("*.c"))


@pytest.mark.sample(5)
@needs_gxx
@pytest.mark.parametrize("path", PB, ids=[p.stem for p in PB])
def test_pipeline_output_passes_stages_a_to_c(path: Path) -> None:
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    text = cuda.emit(lowered, source=path.name)
    (report,) = verify_module(module, text, source=path, lowered=lowered, options=_opts(mode="quick"))
    assert report.ok, report.summary()
    assert report.stage("c").status == "pass"
    assert report.stage("a").status == "pass"
    # The same text scored as a submission, through the evaluator's task function (verify_file:
    # the drop-in found in the text, not taken from the IR), as `transpile evaluate --stages abc
    # --mode quick` scores it. tests/test_evaluate.py and tests/test_evaluate_ray.py run the
    # evaluator itself on a few of these kernels; this keeps all 30 scored. The path is the one
    # verify_module wrote, so nvcc's and the simulator's builds are reused.
    line = score_submission(id=path.stem, cuda_path=str(cache_file("emitted", path.stem, text)),
                            reference=str(path), stages="abc", mode="quick", seed=SEED)
    evaluate_helpers.check_passed(line)


# ---------------------------------------------------------------------------
# Command line


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "transpile.cli", *args], capture_output=True, text=True,
                          env={**__import__("os").environ, "TRANSPILE_VERIFY_GPU": "0"})


@needs_gxx
def test_cli_verify_json_and_exit_status() -> None:
    bad = _cli("verify", str(CHEATS / "gemm_float_acc.cu"), "--against", str(KERNELS / "gemm.c"), "--seed", "5",
               "--json", "--stages", "ac")
    assert bad.returncode == 1, bad.stderr
    assert bad.stderr.startswith("transpile: error: verification fail: stage (c)")
    assert "Traceback" not in bad.stderr
    record = json.loads(bad.stdout)
    assert record["seed"] == 5 and record["verdict"] == "fail"
    assert record["stages"]["c"]["check"] == "precision"
    assert record["stages_reached"] == ["a", "c"] and record["stages_passed"] == ["a"]
    assert record["max_errors"]["C"] > record["tolerances"]["C"]
    good = _cli("verify", str(CHEATS / "ok_dot.cu"), "--against", str(CHEATS / "dot.c"), "--json", "-q",
                "--size", "n=100")
    assert good.returncode == 0, good.stderr
    rec = json.loads(good.stdout)
    assert rec["verdict"] == "pass" and isinstance(rec["seed"], int)
    assert rec["stages"]["d"]["status"] == "skipped"
    missing = _cli("verify", "nope.cu", "--against", str(CHEATS / "dot.c"))
    assert missing.returncode == 1 and missing.stderr.startswith("transpile: error:")


@needs_gxx
def test_compile_refuses_to_write_code_that_fails_verification(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from transpile.cli import main

    monkeypatch.setenv("TRANSPILE_VERIFY_GPU", "0")
    cheat = (CHEATS / "gemm_skip_last_row.cu").read_text()
    monkeypatch.setattr(cuda, "emit", lambda module, source, **options: cheat)
    out = tmp_path / "gemm.cu"
    res = CliRunner().invoke(main, [str(KERNELS / "gemm.c"), "-o", str(out)])
    assert res.exit_code == 1
    assert "verification of the generated CUDA for 'kernel_gemm' failed" in res.output
    assert "[unwritten-output]" in res.output
    assert not out.exists() and not list(tmp_path.iterdir())
    # the replay line reruns the compile's own check: the same failure, word for word
    reason = re.search(r"failed: (.*) \(replay: transpile verify OUT\.cu (.*)\)", res.output)
    assert reason is not None, res.output
    replayed = tmp_path / "OUT.cu"
    replayed.write_text(cheat)
    args = reason.group(2).split()
    assert args[:2] == ["--against", "gemm.c"] and "--quick" in args
    again = _cli("verify", str(replayed), "--against", str(KERNELS / "gemm.c"), *args[2:], "--no-gpu")
    assert again.returncode == 1
    assert f"verification fail: {reason.group(1)}" in again.stderr, again.stderr
    res = CliRunner().invoke(main, [str(KERNELS / "gemm.c"), "-o", str(out), "--no-verify"])
    assert res.exit_code == 0 and out.read_text() == cheat


# ---------------------------------------------------------------------------
# Pieces


def test_shapes_cover_tiny_off_grid_and_non_square() -> None:
    k = frontend.load(KERNELS / "gemm.c").kernels[0]
    sig = kernel_sig(k)
    assert sig.size_params == ("ni", "nj", "nk")
    full = shapes(sig, k, mode="full", work_budget=3e6, requested={"ni": 40, "nj": 50, "nk": 60})
    labels = [s.label for s in full]
    assert labels[:3] == ["n=1", "n=2", "n=3"] and "n=17" in labels and "n=127" in labels
    assert "n=257" not in labels, "257^3 exceeds the work budget"
    ns = next(s for s in full if s.label == "non-square")
    assert len(set(ns.scalars.values())) == 3
    assert next(s for s in full if s.label == "requested").scalars == {"ni": 40, "nj": 50, "nk": 60}
    quick = shapes(sig, k, mode="quick", work_budget=2e5)
    assert [s.label for s in quick] == ["non-square", "drawn", "n=3"]


PRECONDITION = """void kernel_pre(int n, int m, double A[n], double B[m])
{
  int i;
  for (i = 0; i < n; i++)
    A[i] = 2.0 * B[i];
}
"""
#: defined only where k >= n + m - 1 (C[i + j]) and k >= n (B[j][i]): no usual shape beyond n = 1 is.
TIED = """void kernel_tied(int n, int m, int k, double A[n][m], double B[m][k], double C[k])
{
  int i, j;
  for (i = 0; i < n; i++)
    for (j = 0; j < m; j++)
      A[i][j] = B[j][i] + C[i + j];
}
"""


@needs_gxx
def test_sizes_where_the_c_is_undefined_are_skipped_not_failed(tmp_path: Path) -> None:
    # B[i] for i < n reads past B[m] when n > m: the C has no defined result there, and the CUDA
    # cannot be blamed (it failed with a mismatch at n=33, m=17 before).  The call is valid for n <= m.
    src = tmp_path / "pre.c"
    src.write_text(PRECONDITION)
    module = frontend.load(src)
    text = cuda.emit(pipeline.lower(module), source=src.name)
    # Seed 2025 draws n=2586, m=31 for the quick run's drawn shape: undefined.
    (report,) = verify_module(module, text, source=src, options=_opts(mode="quick", seed=2025))
    assert report.verdict == "pass", report.reason
    tested = [sh["sizes"] for sh in report.shapes if sh["stage"] == "c"]
    assert tested and all(sz["n"] <= sz["m"] for sz in tested)
    assert any("skipped" in n and "'B' is read outside its extent" in n for n in report.notes)


@needs_gxx
def test_a_defined_shape_is_found_when_the_usual_ones_are_undefined(tmp_path: Path) -> None:
    src = tmp_path / "tied.c"
    src.write_text(TIED)
    module = frontend.load(src)
    k = module.kernels[0]
    sig = kernel_sig(k)
    labels = [s.label for s in shapes(sig, k, mode="quick", work_budget=2e5)]
    assert labels[-1] == "defined"
    defined = shapes(sig, k, mode="quick", work_budget=2e5)[-1].scalars
    assert defined["k"] >= defined["n"] + defined["m"] - 1 and min(defined.values()) > 3
    text = cuda.emit(pipeline.lower(module), source=src.name)
    (report,) = verify_module(module, text, source=src, options=_opts(mode="quick", seed=0))  # as above
    assert report.verdict == "pass", report.reason
    tested = [sh["shape"] for sh in report.shapes if sh["stage"] == "c"]
    # the defined shape, and alternates of undefined ones that their reordered sizes made defined
    assert "defined" in tested and all(t == "defined" or "-reversed" in t or "-rotated" in t for t in tested), tested


@needs_gxx
def test_a_kernel_undefined_at_every_size_is_inconclusive_not_failed(tmp_path: Path) -> None:
    src = tmp_path / "always.c"
    src.write_text("void f(int n, double A[n], double B[n])\n{\n  int i;\n  for (i = 0; i < n; i++)\n"
                   "    A[i] = B[i + 1];\n}\n")
    module = frontend.load(src)
    text = cuda.emit(pipeline.lower(module), source=src.name)
    (report,) = verify_module(module, text, source=src, options=_opts(mode="quick"))
    assert report.verdict == "inconclusive" and "no shape could be tested" in report.reason


def test_inputs_poison_and_recipes() -> None:
    k = frontend.load(KERNELS / "cholesky.c").kernels[0]
    sig = kernel_sig(k)
    shape = shapes(sig, k, mode="quick", work_budget=2e5)[0]
    x = make_inputs(sig, shape, seed_for(1, 0), "signed", "spd")
    assert x is not None
    a = x["A"]
    assert np.allclose(a, a.T) and np.linalg.eigvalsh(a).min() > 0
    assert make_inputs(sig, shape, seed_for(1, 0), "signed", "random")["A"].tolist() != a.tolist()
    p = poison(np.dtype(np.float64), (3,))
    assert np.isnan(p).all() and p.view(np.uint64)[0] == POISON_BITS["f64"]
    assert (poison(np.dtype(np.int32), (2,)) == np.iinfo(np.int32).min).all()
    k2 = frontend.load(CHEATS / "dot.c").kernels[0]
    sig2 = kernel_sig(k2)
    x2 = make_inputs(sig2, shapes(sig2, k2, mode="quick", work_budget=2e5)[0], seed_for(1, 0), "signed", "random")
    assert x2 is not None and np.isnan(x2["out"]).all(), "out arrays start poisoned"


def test_compare_classifies_failures() -> None:
    ref = np.array([1.0, 2.0, 3.0, 4.0])
    init = np.array([9.0, 9.0, 9.0, 4.0])  # the reference leaves element 3 alone
    tol = tolerance(np.dtype(np.float64), 16)
    assert tol == pytest.approx(4e-10)
    assert compare("C", ref.copy(), ref, init, tol).ok
    assert compare("C", np.array([1.0, 2.0, 9.0, 4.0]), ref, init, tol).kind == "unwritten-output"
    assert compare("C", np.array([1.0, np.nan, 3.0, 4.0]), ref, init, tol).kind == "nan-output"
    assert compare("C", np.array([1.0, 2.5, 3.0, 4.0]), ref, init, tol).kind == "mismatch"
    assert compare("C", ref * np.array([1 + 1e-7, 1, 1, 1]), ref, init, tol).kind == "precision"
    wrote_untouched = compare("C", np.array([1.0, 2.0, 3.0, 5.0]), ref, init, tol)
    assert not wrote_untouched.ok and wrote_untouched.first_bad == (3,)
    ints = np.array([1, 2, 3], dtype=np.int32)
    assert compare("t", ints, ints, ints * 0, 0).ok
    assert compare("t", ints + 1, ints, ints * 0, 0).kind == "mismatch"
    assert "0.5" not in compare("C", np.array([1.0, 2.5, 3.0, 4.0]), ref, init, tol).message()


def test_host_guard_zones() -> None:
    bufs = HostBuffers({"a": np.zeros(4), "b": np.ones(2, dtype=np.int32)})
    assert bufs.violations() == []
    raw = bufs.raw["a"]
    raw[256 + 32] ^= 0xFF  # one byte past the end of a
    assert bufs.violations() == ["host array 'a': 1 byte(s) past its end overwritten"]
    assert bufs.address("b") % 4 == 0


def test_dropin_signature_parsing() -> None:
    sig = kernel_sig(frontend.load(KERNELS / "gemm.c").kernels[0])
    text = (ROOT / "tests" / "golden" / "gemm.cu").read_text()
    params, extern_c = find_dropin(text, "gemm")
    assert extern_c and params is not None and check_dropin(sig, params) == []
    assert find_dropin(text, "nothing") == (None, False)
    params2, _ = find_dropin(text, "gemm_device")
    assert params2 is not None and len(params2) == len(sig.args) + 1


def test_ptxas_report_parsing() -> None:
    out = ("ptxas info    : Compiling entry function '_Z12gemm_kernel0iiiddPdPKdS1_' for 'sm_90'\n"
           "ptxas info    : Function properties for _Z12gemm_kernel0iiiddPdPKdS1_\n"
           "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
           "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 400 bytes cmem[0]\n")
    (r,) = parse_ptxas(out)
    assert r == {"kernel": "gemm_kernel0", "mangled": "_Z12gemm_kernel0iiiddPdPKdS1_", "stack": 8,
                 "spill_stores": 4, "spill_loads": 4, "registers": 40, "smem": 2048, "cmem": 400, "barriers": 1}


def test_ptxas_report_device_functions_and_static_report_agree() -> None:
    # A device function that is not inlined gets a properties block of its own, after the kernel's
    # "Used" line: its stack frame and spills are not the kernel's, and it is not a kernel.
    from transpile.cli.report import KernelResources
    from transpile.cli.report import kernel_resources as static_parse

    out = ("ptxas info    : Compiling entry function '_Z2k0Pd' for 'sm_90'\n"
           "ptxas info    : Function properties for _Z2k0Pd\n"
           "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Used 12 registers, used 0 barriers, 360 bytes cmem[0]\n"
           "ptxas info    : Function properties for _Z6helperd\n"
           "    16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
           "ptxas info    : Function properties for _Z2k1Pd\n"  # a block before its entry line
           "    32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
           "ptxas info    : Compiling entry function '_Z2k1Pd' for 'sm_90'\n"
           "ptxas info    : Used 30 registers, 1024 bytes smem, 360 bytes cmem[0]\n")
    k0, k1 = parse_ptxas(out)
    assert (k0["kernel"], k0["stack"], k0["spill_stores"], k0["registers"]) == ("k0", 0, 0, 12)
    assert (k1["kernel"], k1["stack"], k1["registers"], k1["smem"]) == ("k1", 32, 30, 1024)
    assert static_parse(out) == [KernelResources("k0", 12, 0, 0, 0, 0), KernelResources("k1", 30, 1024, 32, 0, 0)]


def test_child_processes_report_crashes_and_hangs() -> None:
    import os
    import signal
    import time

    assert fork_call(lambda: 6 * 7, timeout=30) == 42
    with pytest.raises(ChildError) as crash:
        fork_call(lambda: os.kill(os.getpid(), signal.SIGSEGV), timeout=30)
    assert crash.value.kind == "crash" and "SIGSEGV" in crash.value.message
    msgs, _, err = fork_stream(lambda send: (send("first"), time.sleep(30)), timeout=0.5)
    assert msgs == ["first"] and err is not None and err.kind == "timeout"


def test_a_crash_is_seen_while_another_process_holds_the_pipe() -> None:
    # A sibling forked by another thread at the same moment inherits the child's pipe; here a
    # grandchild stands in for it: the pipe never reaches EOF, yet the child's death is a crash.
    import os
    import signal
    import time

    def child(send: object) -> None:
        if os.fork() == 0:  # keeps the inherited write end open for 20 s
            time.sleep(20)
            os._exit(0)
        os.kill(os.getpid(), signal.SIGSEGV)

    t0 = time.monotonic()
    _, _, err = fork_stream(child, timeout=15, group=True)
    assert err is not None and err.kind == "crash" and "SIGSEGV" in err.message, err
    assert time.monotonic() - t0 < 10


@needs_gxx
def test_summary_is_free_of_input_values() -> None:
    report = verify_file(CHEATS / "gemm_transposed.cu", KERNELS / "gemm.c", options=_opts())
    text = report.summary()
    assert not re.findall(r"\d\.\d{3,}", text), text  # errors print as 1.23e-04, never as data
    assert f"--seed {SEED}" in text


@needs_gxx
def test_rounding_spread_widens_only_where_rounding_order_matters() -> None:
    # The FMA-contracted build of the reference measures how much a legitimate change of rounding
    # order (a GPU's contraction) moves the outputs. LU without pivoting on random data is sensitive
    # (the tolerance must widen, or a correct GPU kernel fails); on SPD data it is not; and the
    # widening is refused where no tolerance could tell rounding from a wrong result.
    from transpile.verify.prepare import MAX_TOL, Skip, prepare, rounding_spread, spread_widen
    from transpile.verify.reference import GccReference, _fma_flags
    from transpile.verify.synth import Shape

    if _fma_flags() is None:
        pytest.skip("this CPU has no FMA instructions")
    k = frontend.load(KERNELS / "lu.c").kernels[0]
    sig = kernel_sig(k)
    ref = GccReference(sig, KERNELS / "lu.c", function=k.name)
    shape = Shape("n=256", {"n": 256})
    spreads = {}
    for recipe in ("random", "spd"):
        x = make_inputs(sig, shape, seed_for(SEED, 1), "signed", recipe)
        assert x is not None
        spreads[recipe] = rounding_spread(ref, sig, x, ref.run(x))
    assert spreads["random"] > 1e-12 > spreads["spd"] >= 0.0
    # prepare() prefers the recipe whose outputs do not depend on rounding order.
    prep = prepare(ref, sig, k, shape, seed=SEED, index=0)
    assert prep.recipe == "spd" and prep.widen == 1.0 and prep.spread < 1e-12
    assert spread_widen(sig, 256, 0.0) == 1.0
    assert spread_widen(sig, 256, 1e-9) > 1.0
    with pytest.raises(Skip, match="ill-conditioned"):
        spread_widen(sig, 256, MAX_TOL["f64"])


def test_contracted_reference_contracts_loop_carried_chains() -> None:
    """The FMA-contracted reference must contract lu's loop-carried ``A[i][j] -= A[i][k] * A[k][j]``
    even where the tuning avoids FMA chains (gcc 13's generic tuning did: the GPU hosts' spread read 0
    and ill-conditioned shapes went unwidened, runs 51 and 55).  -mtune=znver2 avoids them here too."""
    from transpile.verify.reference import GccReference, _fma_flags

    fma = _fma_flags()
    if fma is None or "-mfma" not in fma or shutil.which("objdump") is None:
        pytest.skip("needs x86 FMA instructions and objdump")
    k = frontend.load(KERNELS / "lu.c").kernels[0]
    ref = GccReference(kernel_sig(k), KERNELS / "lu.c", function=k.name)
    lib = ref._build((), (), (*fma, "-mtune=znver2"))
    asm = subprocess.run(["objdump", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"\bvfn?m(add|sub)", asm), "no FMA instruction in the contracted build"


def test_second_input_set_gets_its_own_tolerance() -> None:
    """The second input set is judged with a tolerance for its own conditioning.  durbin at n = 127
    (the verifier's GPU shape in run 51, its seed): the first set ('signed') is well conditioned, the
    second ('uniform') is not: its FMA rounding spread is above the first set's tolerance, and the
    H200 build missed that tolerance (stage (d) fresh-input, 1.03x).  A result kept from the first
    call must still fail the second set's wider tolerance."""
    from transpile.verify.prepare import SPREAD_FACTOR, prepare, rounding_spread
    from transpile.verify.reference import GccReference, _fma_flags
    from transpile.verify.synth import Shape

    if _fma_flags() is None:
        pytest.skip("this CPU has no FMA instructions")
    k = frontend.load(KERNELS / "durbin.c").kernels[0]
    sig = kernel_sig(k)
    ref = GccReference(sig, KERNELS / "durbin.c", function=k.name)
    prep = prepare(ref, sig, k, Shape("n=127", {"n": 127}), seed=1123640769, index=106)
    f64 = np.dtype(np.float64)
    spread2 = rounding_spread(ref, sig, prep.x2, prep.ref2)
    assert spread2 > prep.tol(f64)  # the first set's tolerance would fail a correctly rounded kernel
    assert prep.tol(f64, second=True) >= SPREAD_FACTOR * spread2
    assert any("second input set" in n for n in prep.notes)
    kept = max(float(np.max(np.abs(prep.ref1[a.name] - prep.ref2[a.name]) / np.maximum(np.abs(prep.ref2[a.name]), 1e-300)))
               for a in sig.outputs)
    assert kept > prep.tol(f64, second=True)  # the first set's answer is still refused on the second


def test_changed_element_run_gets_its_own_tolerance() -> None:
    """Run P (one input element redrawn, the same host buffers) is judged with a tolerance for its own
    conditioning.  xf_matvec in float at n = 17 (the clean-clone CI's compile of 5732919, seed
    334764245): the redrawn element makes a sum cancel, its FMA rounding spread is 0.6x the first
    set's tolerance, and the simulated kernel's FMA result missed that tolerance (4.92e-05 against
    4.4e-05).  The run's tolerance covers its own spread; a result kept from the first call must still
    fail it."""
    from transpile.verify.prepare import SPREAD_FACTOR, prepare, rounding_spread
    from transpile.verify.reference import GccReference, _fma_flags
    from transpile.verify.synth import Shape

    if _fma_flags() is None:
        pytest.skip("this CPU has no FMA instructions")
    path = Path(__file__).parent / "ordinary" / "xf_matvec.c"
    k = frontend.load(path).kernels[0]
    sig = kernel_sig(k)
    ref = GccReference(sig, path, function=k.name)
    prep = prepare(ref, sig, k, Shape("non-square", {"n": 17}), seed=334764245, index=0, dist1="signed",
                   dist2="uniform", extra=True)
    f32 = np.dtype(np.float32)
    xp, rp = prep.extra["p"]
    spread = rounding_spread(ref, sig, xp, rp)
    assert prep.tol(f32, extra="p") >= SPREAD_FACTOR * spread > prep.tol(f32)
    kept = float(np.max(np.abs(prep.ref1["y"] - rp["y"]) / np.maximum(np.abs(rp["y"]), 1e-30)))
    assert kept > prep.tol(f32, extra="p")  # the first call's answer is still refused


def test_a_zero_the_reference_computed_may_have_either_sign() -> None:
    """gemm's C[i][j] = -0.0 (the initial bits) stays -0.0 in the reference (-0.0 * beta plus terms of
    -0.0) and is +0.0 in a kernel whose sum starts at +0.0: a computed zero, not a write where the
    reference wrote nothing (the clean-clone CI of 93f209c, examples/gemm.c, seed 2130911590).  Any
    other value there still fails."""
    init = np.array([-0.0, 1.0, 2.0])
    ref = np.array([-0.0, 3.0, 2.0])  # elements 0 and 2 keep their initial bits
    tol = tolerance(np.dtype(np.float64), 4)
    assert compare("C", np.array([0.0, 3.0, 2.0]), ref, init, tol).ok
    assert not compare("C", np.array([-0.0, 3.0, -2.0]), ref, init, tol).ok
    assert not compare("C", np.array([1e-300, 3.0, 2.0]), ref, init, tol).ok


def test_amplification_widens_float_outputs_only(tmp_path: Path) -> None:
    """The tolerance holds AMP_FACTOR * amplification * eps * sqrt(depth) of the output's type: float
    outputs widen from an amplification of about 100; double outputs never more than before
    (amp / ACCEPT_AMPLIFICATION already covers them); past MAX_TOL the shape is skipped."""
    from transpile.verify.prepare import ACCEPT_AMPLIFICATION, Skip, amplification_widen

    path = tmp_path / "fcorr.c"
    path.write_text((KERNELS / "correlation.c").read_text().replace("double", "float"))
    f32 = kernel_sig(frontend.load(path).kernels[0])
    f64 = kernel_sig(frontend.load(KERNELS / "correlation.c").kernels[0])
    assert amplification_widen(f32, 13, 1.0) == 1.0
    assert amplification_widen(f32, 13, 1e3) > 10
    for amp in (1.0, 1e2, 1e4, 1e6):
        assert amplification_widen(f64, 13, amp) <= max(1.0, amp / ACCEPT_AMPLIFICATION)
    with pytest.raises(Skip, match="ill-conditioned for float32"):
        amplification_widen(f32, 13, 1e5)


@needs_gxx
@pytest.mark.parametrize("seed", [2, 3, 5])
def test_float_correlation_is_not_failed_for_its_own_rounding(tmp_path: Path, seed: int) -> None:
    """correlation in float: (data - mean) cancels, amplifying the reordered sums' rounding by about
    1e3, which put 1-3 elements past the float tolerance for these seeds before the tolerance took
    the amplification into account (errors 0.6e-4 to 1.7e-4 against 3.6e-5)."""
    path = tmp_path / "fcorr.c"
    path.write_text((KERNELS / "correlation.c").read_text().replace("double", "float"))
    module = frontend.load(path)
    lowered = pipeline.lower(module)
    text = cuda.emit(lowered, source=path.name)
    (report,) = verify_module(module, text, source=path, lowered=lowered,
                              options=Options(seed=seed, mode="quick", stages="abc", gpu=False))
    assert report.ok and report.stage("c").status == "pass", report.summary()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_nvcc_cache_is_keyed_by_content_not_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from transpile.verify import stages
    from transpile.verify.report import Report

    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "cache"))
    text = f"// {tmp_path.name}\n__global__ void k(double *x) {{ x[threadIdx.x] += 1.0; }}\n"
    first, second = tmp_path / "a" / "k.cu", tmp_path / "b" / "k.cu"
    for cu in (first, second):
        cu.parent.mkdir()
        cu.write_text(text)
    report = Report("k", str(first), "ref", 1)
    stages.stage_b(report, first)
    assert report.stage("b").status == "pass"

    def no_nvcc(*args: object, **kwargs: object) -> None:
        raise AssertionError("nvcc ran again for the same text")

    monkeypatch.setattr(stages.subprocess, "run", no_nvcc)
    again = Report("k", str(second), "ref", 1)
    stages.stage_b(again, second)  # same text, another directory: the cached cubin and ptxas report
    assert again.stage("b").status == "pass" and again.resources == report.resources
    second.write_text(text + "// changed\n")
    with pytest.raises(AssertionError, match="nvcc ran again"):
        stages.stage_b(Report("k", str(second), "ref", 1), second)


def test_a_child_writes_through_its_own_stdio_objects() -> None:
    # A parent thread inside a write to sys.stderr (a progress line) holds the buffer's lock; a child
    # forked at that moment inherits the lock held, and its first print would hang until the timeout.
    # So the child must not use the parent's stdio objects: it gets fresh ones on fds 1 and 2.
    import sys
    from typing import Any

    from transpile.verify.proc import fork_stream

    parent = (id(sys.stdout), id(sys.stderr))

    def child(send: Any) -> tuple[bool, bool, int, int]:
        print("to stderr", file=sys.stderr)
        return id(sys.stdout) != parent[0], id(sys.stderr) != parent[1], sys.stdout.fileno(), sys.stderr.fileno()

    _, result, error = fork_stream(child, timeout=30, what="the child")
    assert error is None and result == (True, True, 1, 2), error

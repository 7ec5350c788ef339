"""Parallel isolated evaluation (transpile/search/evaluate.py), local backend: crashes, hangs and errors
become outcomes, a given-up run leaves no process behind, and ``transpile evaluate --jobs 2``
scores kernels' CUDA (one per emitter shape, h.SHAPES; all 30 are scored one by one in
tests/test_verify.py) next to one that loops for ever and one that segfaults.
(The Ray backend: tests/test_evaluate_ray.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import evaluate_helpers as h
from transpile.diagnostics import TranspileError
from transpile.search.evaluate import Task, load_submissions, run_tasks, score_submission

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")
HELP = "tests.evaluate_helpers"


@pytest.fixture(scope="module")
def files() -> dict[str, Path]:
    return h.emitted(h.SHAPES)


def _wait_for(path: Path, seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.05)


def _dies(pid: int, seconds: float = 5.0) -> bool:
    # A SIGKILL is delivered when the process next runs: on a loaded machine that can be just after
    # the group was killed.
    end = time.monotonic() + seconds
    while not h.dead(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def test_outcomes_of_crashes_hangs_and_errors(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    tasks = [Task("hang", f"{HELP}:hang", {"pidfile": str(pidfile)}), Task("segv", f"{HELP}:segfault"),
             Task("boom", f"{HELP}:boom"), Task("set", f"{HELP}:not_json"), Task("nomod", "no_such_module:f"),
             *[Task(f"ok{i}", f"{HELP}:double", {"x": i}) for i in range(4)]]
    t0 = time.monotonic()
    outcomes = list(run_tasks(tasks, jobs=2, timeout=3.0))
    wall = time.monotonic() - t0
    by = {o.key: o for o in outcomes}
    assert sorted(by) == sorted(t.key for t in tasks)
    assert all(by[f"ok{i}"].ok and by[f"ok{i}"].value == {"x": 2 * i} for i in range(4))
    assert (by["hang"].status, by["hang"].ok) == ("timeout", False) and "3 s" in by["hang"].error
    assert by["hang"].seconds >= 3.0
    assert by["segv"].status == "crash" and "SIGSEGV" in by["segv"].error
    assert by["boom"].status == "error" and "ValueError: boom" in by["boom"].error
    assert by["set"].status == "error" and "JSON" in by["set"].error
    assert by["nomod"].status == "error" and "no_such_module" in by["nomod"].error
    # Completion order: the hang was submitted first and comes last.
    assert outcomes[-1].key == "hang", [o.key for o in outcomes]
    assert wall < 20, wall
    # The hanging task's own child died with its process group.
    assert _dies(int(pidfile.read_text()))


def test_closing_the_stream_kills_what_runs(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    stream = run_tasks([Task("hang", f"{HELP}:hang", {"pidfile": str(pidfile)}),
                        Task("quick", f"{HELP}:nap", {"seconds": 0.5}),
                        *[Task(f"later{i}", f"{HELP}:nap", {"seconds": 30}) for i in range(3)]],
                       jobs=2, timeout=300.0)
    first = next(stream)
    assert first.key == "quick" and first.value == 0.5
    _wait_for(pidfile)
    t0 = time.monotonic()
    stream.close()  # the hang and a 30 s nap are running, two naps wait: none may hold us up
    assert time.monotonic() - t0 < 10
    assert _dies(int(pidfile.read_text()))


def test_run_tasks_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="jobs"):
        run_tasks([], jobs=0)
    with pytest.raises(ValueError, match="backend"):
        run_tasks([], backend="slurm")
    assert list(run_tasks([])) == []


def test_missing_ray_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(TranspileError, match=r"pip install transpile\[ray\]"):
        list(run_tasks([Task("x", f"{HELP}:double", {"x": 1})], backend="ray"))


def test_submission_file_diagnostics(tmp_path: Path) -> None:
    ref = h.KERNELS / "gemm.c"
    good = json.dumps({"id": "a", "cuda": "x", "reference": str(ref)})
    cases = {
        "{not json": r"subs\.jsonl:2:2: error: not JSON",
        json.dumps({"id": "a", "cuda": "x", "reference": str(ref)}): r"subs\.jsonl:2:1: error: .*unique \"id\"",
        json.dumps({"id": "b", "cuda": "x", "cuda_path": "y.cu", "reference": str(ref)}): "exactly one of",
        json.dumps({"id": "b", "cuda": "x"}): "missing \"reference\"",
        json.dumps({"id": "b", "cuda": "x", "reference": "nope.c"}): "nope.c': no such file",
        json.dumps(["a"]): "expected a JSON object",
    }
    path = tmp_path / "subs.jsonl"
    for bad, pattern in cases.items():
        path.write_text(f"{good}\n{bad}\n")
        with pytest.raises(TranspileError, match=pattern):
            load_submissions(path)
    # Relative paths are relative to the submissions file.
    (tmp_path / "k.cu").write_text("x")
    path.write_text(json.dumps({"id": 7, "cuda_path": "k.cu", "reference": str(ref)}) + "\n\n")
    assert load_submissions(path) == [{"id": "7", "reference": str(ref), "function": None,
                                       "cuda_path": str(tmp_path / "k.cu")}]
    run = subprocess.run([sys.executable, "-m", "transpile.cli", "evaluate", str(tmp_path / "none.jsonl")],
                         capture_output=True, text=True)
    assert run.returncode == 1 and run.stderr.startswith("transpile: error: cannot read")
    assert "Traceback" not in run.stderr


@pytest.mark.slow
@needs_gxx
def test_a_verification_that_hangs_is_killed_with_its_children(files: dict[str, Path]) -> None:
    # The simulator's own timeout is out of reach here, so the evaluator's kill is what stops it.
    args = {"id": "hang", "cuda": h.hang_cuda(files["gemm"]), "reference": str(h.KERNELS / "gemm.c"),
            "stages": "abc", "mode": "quick", "sim_timeout": 1000.0}
    t0 = time.monotonic()
    (out,) = run_tasks([Task("hang", "transpile.search.evaluate:score_submission", args)], timeout=10.0)
    assert out.status == "timeout" and not out.ok, out
    assert time.monotonic() - t0 < 40


@needs_gxx
def test_score_submission_line(files: dict[str, Path]) -> None:
    line = score_submission(id="g", cuda_path=str(h.CHEATS / "gemm_skip_last_row.cu"),
                            reference=str(h.KERNELS / "gemm.c"), stages="abc", mode="quick", seed=3, report=True)
    assert (line["verdict"], line["stage"], line["check"]) == ("fail", "c", "unwritten-output"), line
    assert line["rewards"] == {"stage": 0.3, "speed": 0.0} and line["seed"] == 3
    assert line["feedback"].startswith("stage (c)") and line["report"]["stages"]["c"]["status"] == "fail"
    json.dumps(line)


@pytest.mark.slow
@needs_gxx
def test_evaluate_jobs_2_over_kernels_a_hang_and_a_crash(files: dict[str, Path], tmp_path: Path) -> None:
    subs = h.submissions(files, tmp_path)
    scores = tmp_path / "scores.jsonl"
    t0 = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "transpile.cli", "evaluate", str(subs), "-o", str(scores),
                          "--jobs", "2", "--stages", "abc", "--mode", "quick", "--timeout", "30"],
                         capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    lines = [json.loads(x) for x in scores.read_text().splitlines()]
    h.check_scores(lines, files)
    assert all(isinstance(x["seconds"], float) for x in lines)
    assert len(run.stderr.strip().splitlines()) >= len(lines)  # a progress line each
    assert wall < 600, wall


def test_modules_are_imported_before_any_fork() -> None:
    # A fork while another thread imports a module leaves that module's lock held in the child:
    # run_tasks imports every transpile/passes module (and the task's own) before its first fork.
    code = ("import sys\n"
            "from transpile.search.evaluate import Task, run_tasks\n"
            "assert 'transpile.sim.build' not in sys.modules and 'tests.evaluate_helpers' not in sys.modules\n"
            f"outs = list(run_tasks([Task('t', '{HELP}:double', {{'x': 2}})], jobs=1, timeout=60))\n"
            "assert outs[0].value == {'x': 4}, outs\n"
            "missing = [m for m in ('transpile.sim.build', 'transpile.verify.simstage', 'transpile.search.dataset',\n"
            "                       'passes.footprint', 'tests.evaluate_helpers') if m not in sys.modules]\n"
            "assert not missing, missing\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parent.parent)
    assert run.returncode == 0, run.stderr


def test_bad_lines_are_error_records_and_the_rest_are_scored(tmp_path: Path) -> None:
    """A malformed line or a missing file costs only that submission (issue 41, item 7)."""
    (tmp_path / "ref").mkdir()
    ref = tmp_path / "ref" / "k.c"
    ref.write_text("void k(int n, double x[n]) { for (int i = 0; i < n; i++) x[i] = 2.0 * x[i]; }\n")
    cuda = 'extern "C" void k(int n, double *x) {}\n'
    lines = [json.dumps({"id": "good", "cuda": cuda, "reference": "ref/k.c"}), "{not json",
             json.dumps({"id": "gone", "cuda_path": "gone.cu", "reference": "ref/k.c"}), ""]
    subs = tmp_path / "subs.jsonl"
    subs.write_text("\n".join(lines))
    out = tmp_path / "scores.jsonl"
    run = subprocess.run([sys.executable, "-m", "transpile.cli", "evaluate", str(subs), "-o", str(out),
                          "--stages", "a", "--no-gpu", "-q"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    recs = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(recs) == {"good", "line 2", "gone"}
    assert recs["good"]["status"] == "scored" and recs["good"]["stages_passed"] == ["a"], recs["good"]
    assert recs["line 2"]["status"] == "error" and "subs.jsonl:2:2: error: not JSON" in recs["line 2"]["reason"]
    assert recs["gone"]["line"] == 3 and "cuda_path 'gone.cu': no such file" in recs["gone"]["reason"]
    assert str(tmp_path) not in recs["gone"]["reason"].split("error:", 1)[1]  # the path as the list gives it
    assert "subs.jsonl:2:2: error: not JSON" in run.stderr

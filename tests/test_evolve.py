"""The schedule search (transpile/search/evolve.py): schedules, determinism, feedback, pruning, cache, CLI.

The search-logic tests stand a recorded check in for the verifier (``Checked``
results chosen by the test) so that they run in seconds; every candidate is
still lowered and emitted by the real pipeline and priced by the real cost
model.  ``test_cli_evolve_*`` run the real verifier (stages a-c) end to end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transpile import frontend, ir
from transpile.diagnostics import TranspileError
from transpile.search import evolve, rewards

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"
GEMM_SIZES = {"ni": 2000, "nj": 2300, "nk": 2600}


def passing(module: ir.Module, lowered: ir.Module, text: str) -> evolve.Checked:
    return evolve.Checked(True, resources=[])


def search(kernel: str = "gemm", check: evolve.Check = passing, **kw: Any) -> evolve.Search:
    sizes = kw.pop("sizes", GEMM_SIZES)
    module = frontend.load(KERNELS / f"{kernel}.c")
    return evolve.Search(module, f"{kernel}.c", check, evolve.Settings(sizes=sizes, **kw))


# -- schedules


schedules = st.builds(evolve.Schedule, **{k: st.sampled_from(v) for k, v in evolve.SPACE.items()})


@settings(max_examples=200, deadline=None)
@given(schedules)
def test_schedule_names_parse_back(s: evolve.Schedule) -> None:
    if s.problem() is not None:
        with pytest.raises(ValueError):
            evolve.Schedule.parse(s.name())
        return
    assert evolve.Schedule.parse(s.name()) == s
    assert (s.name() == "default") == (s == evolve.Schedule())


@pytest.mark.parametrize("text, why", [
    ("", "empty"), ("tile=64", "2 positive"), ("tile=64x64x1", "2 positive"), ("fuse=maybe", "on or off"),
    ("warp=32", "unknown knob"), ("tile", "unknown knob"), ("tile=32x32 tile=64x64", "twice"),
    ("block1=1x1x1", "32..1024"), ("block2=32x8x2", "1 in the dimensions"), ("coarsen=3x3", "multiple"),
    ("__import__('os').system('x')", "unknown knob"), ("tile=0x64", "positive"),
])
def test_bad_schedules_are_rejected_with_a_reason(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        evolve.Schedule.parse(text)


# -- the search


def test_same_seed_same_search_and_other_seed_other_mutations() -> None:
    runs = [search(rounds=3, seed=s) for s in (7, 7, 8)]
    for r in runs:
        r.run()
    names = [[(t.generation, t.name, t.status) for t in r.trials] for r in runs]
    assert names[0] == names[1]
    assert [n for n in names[0] if n[0] == 0] == [n for n in names[2] if n[0] == 0]  # generation 0 is fixed
    assert names[0] != names[2]
    assert runs[0].best() is not None and runs[0].stopped == "3 generation(s) run (--evolve-rounds)"


def test_generation_zero_probes_each_knob_and_drops_the_ones_that_do_not_matter() -> None:
    s = search(rounds=1)
    s.run()
    gen0 = [t for t in s.trials if t.generation == 0]
    assert gen0[0].origin == "default" and gen0[0].status == "pass"
    assert {next(iter(t.schedule.diff(evolve.Schedule()))) for t in gen0[1:]} == set(evolve.SPACE)
    # gemm has no plain launch: the block shapes never change its CUDA.
    assert {"block1", "block2", "block3"}.isdisjoint(s.relevant)
    assert {"mma", "mma_shape", "fuse"} <= s.relevant
    # tile/coarsen do not change the tensor-core kernel, but stay searchable because mma=off uses them.
    assert {"tile", "coarsen"} <= s.relevant
    dups = [t for t in gen0 if t.status == "duplicate"]
    assert dups and all(t.same_as == "default" and t.model_ms is None for t in dups)


def test_ranking_is_correctness_first_then_the_model() -> None:
    s = search(rounds=1)
    s.run()
    ranked = sorted((t for t in s.trials if t.status == "pass"), key=lambda t: t.rank)
    costs = [t.model_ms for t in ranked]
    assert all(c is not None for c in costs)
    # rank order agrees with the model up to the tournament's 3% ties
    for a, b in zip(ranked, ranked[1:]):
        assert a.model_ms <= b.model_ms * (1 + rewards.SPEED_TIE)  # type: ignore[operator]
    assert s.best() is ranked[0]


def test_a_wrong_result_makes_its_knob_change_taboo() -> None:
    def check(module: ir.Module, lowered: ir.Module, text: str) -> evolve.Checked:
        if "__shared__" not in text:  # every schedule without shared staging "computes wrong results"
            return evolve.Checked(False, "c", "output C differs")
        return evolve.Checked(True)

    s = search(check=check, rounds=4, seed=3)
    s.run()
    failed = [t for t in s.trials if t.status == "fail"]
    assert failed and failed[0].stage == "c" and "taboo" in failed[0].feedback
    bad = dict(failed[0].schedule.diff(evolve.Schedule()))
    assert set(bad.items()) <= set(s.taboo)
    later = [t for t in s.trials if t.generation > failed[0].generation and t.status != "skipped"]
    for t in later:
        assert not any(getattr(t.schedule, k) == v for k, v in s.taboo), t.name


def test_spills_make_larger_micro_tiles_taboo() -> None:
    def check(module: ir.Module, lowered: ir.Module, text: str) -> evolve.Checked:
        return evolve.Checked(True, resources=[{"kernel": "kernel_gemm_kernel0", "registers": 255,
                                                "spill_stores": 64, "spill_loads": 64}])

    s = search(check=check, rounds=1, base=replace(evolve.Schedule(), mma=False))
    s.s = replace(s.s, fixed=frozenset({"mma"}))
    trial = evolve.Trial(replace(s.s.base, coarsen=(8, 4)), 0, "probe")
    s._add(trial)
    s._evaluate(trial)
    assert trial.status == "pass" and s.spill_floor == 32 and "spills" in trial.feedback
    assert s._forbidden(replace(s.s.base, coarsen=(4, 8))).startswith("taboo")
    assert s._forbidden(replace(s.s.base, coarsen=(2, 4))) == ""


def test_nothing_passing_stops_after_the_stuck_rounds_and_compile_reports_it(tmp_path: Path) -> None:
    def failing(module: ir.Module, lowered: ir.Module, text: str) -> evolve.Checked:
        return evolve.Checked(False, "b", "nvcc: error")

    s = search(check=failing, rounds=10, stuck_rounds=2)
    s.run()
    assert s.generation == 2 and s.stopped == "nothing passed verification in 2 generation(s)"
    module = frontend.load(KERNELS / "gemm.c")
    with pytest.raises(TranspileError, match="no candidate schedule passed"):
        evolve.compile_evolved(module, KERNELS / "gemm.c", evolve.Settings(sizes=GEMM_SIZES, rounds=3),
                               cache=evolve.Cache(tmp_path), check=failing)
    assert not list(tmp_path.glob("*.json"))  # a failed search is not cached


@pytest.mark.parametrize("verified", [False, True])
def test_a_default_the_verifier_cannot_judge_is_written_as_without_evolve(tmp_path: Path, verified: bool) -> None:
    # Nothing passed, but the default was not failed either: 'inconclusive' (no meaningful test) or
    # 'unverified' (nothing could run it).  Plain compilation writes such a kernel with a warning;
    # --evolve must not refuse it, and must not pick an unjudged candidate over the default.
    def unjudged(module: ir.Module, lowered: ir.Module, text: str) -> evolve.Checked:
        if verified:
            return evolve.Checked(True, resources=[], verified=False)
        return evolve.Checked(False, "c", "degenerate test", inconclusive=True)

    module = frontend.load(KERNELS / "gemm.c")
    out = evolve.compile_evolved(module, KERNELS / "gemm.c", evolve.Settings(sizes=GEMM_SIZES, rounds=2),
                                 cache=evolve.Cache(tmp_path), check=unjudged)
    assert out.schedule == evolve.Schedule() and not out.verified and not out.cache_hit
    assert out.text == out.schedule.emit(out.schedule.lower(module), "gemm.c", host=module)
    assert "no candidate passed verification" in out.summary
    assert not list(tmp_path.glob("*.json"))  # the caller verifies it again; nothing is cached


def test_a_failed_default_is_not_written_even_when_others_are_unjudged(tmp_path: Path) -> None:
    def check(module: ir.Module, lowered: ir.Module, text: str) -> evolve.Checked:
        if text == default_text:
            return evolve.Checked(False, "c", "mismatch")
        return evolve.Checked(False, "c", "degenerate test", inconclusive=True)

    module = frontend.load(KERNELS / "gemm.c")
    default_text = evolve.Schedule().emit(evolve.Schedule().lower(module), "gemm.c", host=module)
    s = evolve.Search(module, "gemm.c", check, evolve.Settings(sizes=GEMM_SIZES, rounds=1))
    s.run()
    assert {t.status for t in s.trials if t.origin == "default"} == {"fail"}
    assert "inconclusive" in {t.status for t in s.trials}
    assert evolve.fallback(s) is None
    with pytest.raises(TranspileError, match="no candidate schedule passed"):
        evolve.compile_evolved(module, KERNELS / "gemm.c", evolve.Settings(sizes=GEMM_SIZES, rounds=1),
                               cache=evolve.Cache(tmp_path), check=check)


NO_OP_IR = """kernel affine(i32 n, inout f64 A[17*n+7]) {
  for i in 0..n { for j in 0..n { A[8*n+3] = A[8*n+3]; } }
}
"""


def test_cli_evolve_writes_a_kernel_without_a_meaningful_test_as_plain_compile_does(tmp_path: Path) -> None:
    # The verifier calls a kernel that writes nothing 'inconclusive' (a ghost test): plain compile
    # with --verify=warn writes it with a warning (exit 0), and so must --evolve (it exited 1, found by
    # fuzz_cuda --ir).
    env = {**os.environ, "TRANSPILE_EVOLVE_CACHE_DIR": str(tmp_path / "evolve")}  # builds: shared
    src = tmp_path / "noop.ir"
    src.write_text(NO_OP_IR)
    # By default an inconclusive verification is an error: exit 1, no output, the verdict and notes shown.
    refused = _transpile(str(src), "-o", str(tmp_path / "refused.cu"), env=env)
    assert refused.returncode == 1 and not (tmp_path / "refused.cu").exists(), refused.stderr
    assert "not verified" in refused.stderr and "ghost shape" in refused.stderr, refused.stderr
    plain = _transpile(str(src), "-o", str(tmp_path / "plain.cu"), "--verify=warn", env=env)
    evolved = _transpile(str(src), "-o", str(tmp_path / "evolved.cu"), "--evolve", "--evolve-rounds", "1",
                         "--evolve-measure", "model", "--verify=warn", env=env)
    for proc in (plain, evolved):
        assert proc.returncode == 0, proc.stderr
        assert "not fully verified" in proc.stderr and "degenerate test" in proc.stderr
    assert "no candidate passed verification" in evolved.stderr
    assert (tmp_path / "evolved.cu").read_text() == (tmp_path / "plain.cu").read_text()
    cmd = _transpile("evolve", str(src), "-o", str(tmp_path / "out"), "--rounds", "1", "--measure", "model",
                     "--json", env=env)
    assert cmd.returncode == 0, cmd.stderr
    assert [json.loads(ln)["status"] for ln in cmd.stdout.splitlines()] == ["ok"]
    assert (tmp_path / "out" / "noop.cu").read_text() == (tmp_path / "plain.cu").read_text()


def test_near_roofline_stops_after_generation_zero() -> None:
    s = search(rounds=5, near_roof=0.0)
    s.run()
    assert s.generation == 1 and s.stopped.startswith("near the roofline")
    s = search(rounds=2, near_roof=1.01)  # unreachable: the rounds end it
    s.run()
    assert s.generation == 2


def test_time_budget_stops_the_search() -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 10.0
        return now[0]

    module = frontend.load(KERNELS / "gemm.c")
    s = evolve.Search(module, "gemm.c", passing, evolve.Settings(sizes=GEMM_SIZES, rounds=50, time_budget=100),
                      clock=clock)
    s.run()
    assert "time budget" in (s.stopped or "")
    assert any(t.status == "skipped" and t.reason == "time budget spent" for t in s.trials)


def test_a_kernel_no_knob_changes_stops_at_once() -> None:
    s = search("durbin", sizes={"n": 4000}, rounds=5,
               fixed=frozenset({"block1", "fuse"}))  # what is left cannot change durbin's CUDA
    s.run()
    assert s.relevant == set() and s.stopped == "no knob changes this kernel's CUDA"
    assert s.generation == 1


def test_shared_budget_goes_to_the_kernels_in_between() -> None:
    done = search(rounds=6, near_roof=0.0)  # "at its roofline" after generation 0
    between = search(rounds=3)
    evolve.search_many([done, between], time_budget=3600)
    assert done.generation == 1 and between.generation == 3
    assert done.stopped.startswith("near the roofline")


def test_llm_proposals_are_parsed_never_run() -> None:
    class FakeClient:
        def __init__(self) -> None:
            self.prompts: list[str] = []

        def chat(self, messages: list[dict[str, str]], *, conversation: str) -> str:
            self.prompts.append(messages[0]["content"])
            return "```\nmma_shape=64x64x16x32x32x3\n__import__('os').system('touch /tmp/pwned')\ntile=7x7\n```"

    client = FakeClient()
    module = frontend.load(KERNELS / "gemm.c")
    s = evolve.Search(module, "gemm.c", passing, evolve.Settings(sizes=GEMM_SIZES, rounds=1),
                      propose=evolve.llm_proposer(client))
    s.run()
    assert "kernel kernel_gemm" in client.prompts[0] and "mma_shape" in client.prompts[0]
    llm = [t for t in s.trials if t.origin == "llm"]
    assert [t.name for t in llm] == ["mma_shape=64x64x16x32x32x3"] and llm[0].status == "pass"
    assert len(s.rejected) == 2 and all("rejected" in r for r in s.rejected)
    assert "llm: generation 0: proposal" in s.table()
    assert not Path("/tmp/pwned").exists()


def test_rewards_compare_estimates_only_with_estimates() -> None:
    fast, slow = {"verdict": "pass", "cost_model": {"ms": 1.0}}, {"verdict": "pass", "cost_model": {"ms": 2.0}}
    timed = {"verdict": "pass", "timing": {"median_ms": 5.0}, "cost_model": {"ms": 9.0}}
    assert rewards.compare(fast, slow) == 1 and rewards.compare(slow, fast) == -1
    assert rewards.compare(timed, fast) == 0  # a measured time is never compared with an estimate
    assert rewards.speed_key(timed) == 5.0 and rewards.speed_key(fast) == 1.0


# -- the cache and the command line


def test_cache_hit_returns_the_same_output(tmp_path: Path) -> None:
    module = frontend.load(KERNELS / "gemm.c")
    st_ = evolve.Settings(sizes=GEMM_SIZES, rounds=2)
    cache = evolve.Cache(tmp_path)
    first = evolve.compile_evolved(module, KERNELS / "gemm.c", st_, cache=cache, check=passing)
    second = evolve.compile_evolved(module, KERNELS / "gemm.c", st_, cache=cache, check=passing)
    assert not first.cache_hit and second.cache_hit
    assert second.text == first.text and second.schedule == first.schedule
    assert not second.verified  # the caller verifies a cached schedule's output again
    other = evolve.compile_evolved(module, KERNELS / "gemm.c", replace(st_, sizes={**GEMM_SIZES, "nk": 64}),
                                   cache=cache, check=passing)
    assert not other.cache_hit  # sizes are part of the key
    for f in tmp_path.glob("*.json"):  # a damaged or foreign entry means: search again
        f.write_text(json.dumps({"schedule": "tile=9x9"}))
    again = evolve.compile_evolved(module, KERNELS / "gemm.c", st_, cache=cache, check=passing)
    assert not again.cache_hit and again.text == first.text


def _transpile(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "transpile.cli", *args], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.slow
def test_cli_evolve_writes_verified_output_then_hits_the_cache(tmp_path: Path) -> None:
    env = {**os.environ, "TRANSPILE_EVOLVE_CACHE_DIR": str(tmp_path / "evolve")}  # builds: shared
    out = tmp_path / "atax.cu"
    args = [str(KERNELS / "atax.c"), "--evolve", "--evolve-rounds", "1", "--evolve-measure", "model", "-o", str(out)]
    first = _transpile(*args, env=env)
    assert first.returncode == 0, first.stderr
    assert "stopped:" in first.stderr and "evolve: " in first.stderr and " chosen from " in first.stderr
    text = out.read_text()
    assert "__global__" in text
    second = _transpile(*args, env=env)
    assert second.returncode == 0, second.stderr
    assert "evolve: cache hit" in second.stderr and out.read_text() == text


def test_cli_evolve_rejects_conflicting_options(tmp_path: Path) -> None:
    proc = _transpile(str(KERNELS / "gemm.c"), "--evolve", "--naive", "-o", str(tmp_path / "x.cu"),
                      env=dict(os.environ))
    assert proc.returncode == 2 and "--evolve" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.cu").exists()


@pytest.mark.parametrize("kernel", ["jacobi_2d", "adi", "gemm", "durbin"])
def test_default_sizes_give_every_integer_parameter_a_value(kernel: str) -> None:
    # A time-step count left out priced jacobi-2d's host loop at 0 iterations (0 ms for every candidate).
    module = frontend.load(KERNELS / f"{kernel}.c")
    sizes = evolve.default_sizes(module)
    ints = {p.name for k in module.kernels for p in k.params if isinstance(p.ty, ir.Scalar) and p.ty.is_int}
    assert ints <= set(sizes)
    s = evolve.Search(module, f"{kernel}.c", passing, evolve.Settings(sizes=sizes, rounds=1))
    trial = evolve.Trial(evolve.Schedule(), 0, "default")
    s._add(trial)
    s._evaluate(trial)
    assert trial.model_ms is not None and trial.model_ms > 0


class EditingClient:
    """A stand-in LLM whose answer edits the CUDA it is shown with ``change``."""

    def __init__(self, change: Any) -> None:
        self.change = change
        self.prompts: list[str] = []

    def chat(self, messages: list[dict[str, str]], *, conversation: str) -> str:
        prompt = messages[0]["content"]
        self.prompts.append(prompt)
        code = prompt.split("```cuda\n", 1)[1].rsplit("\n```", 1)[0]
        return self.change(code)


def timed(module: ir.Module, lowered: ir.Module | None, text: str) -> evolve.Checked:
    """A GPU stand-in: edited files marked '// faster' at their end take half the time (a comment of the
    emitted file may say "faster" too)."""
    return evolve.Checked(True, measured_ms=0.5 if text.rstrip().endswith("// faster") else 1.0)


def gpu_search(client: Any, check: evolve.Check = timed, rounds: int = 2) -> evolve.Search:
    module = frontend.load(KERNELS / "gemm.c")
    return evolve.Search(module, "gemm.c", check, evolve.Settings(sizes=GEMM_SIZES, rounds=rounds, measure="gpu"),
                         edit=evolve.llm_editor(client))


def test_an_llm_edit_is_verified_timed_and_can_win(tmp_path: Path) -> None:
    client = EditingClient(lambda code: f"```cuda\n{code}\n// faster\n```")
    s = gpu_search(client)
    s.run()
    edits = [t for t in s.trials if t.origin == "llm-cuda"]
    assert [t.name for t in edits] == ["llm-cuda-1"] and edits[0].status == "pass"
    assert s.best() is edits[0] and edits[0].text is not None and edits[0].text.endswith("// faster\n")
    assert 'extern "C" void kernel_gemm(' in client.prompts[0]
    # compile_evolved writes the edit, and a cache hit gives it back (for the caller to verify again)
    module = frontend.load(KERNELS / "gemm.c")
    st_ = evolve.Settings(sizes=GEMM_SIZES, rounds=2, measure="gpu")
    cache = evolve.Cache(tmp_path)
    first = evolve.compile_evolved(module, KERNELS / "gemm.c", st_, cache=cache, check=timed,
                                   edit=evolve.llm_editor(EditingClient(lambda c: f"```cuda\n{c}\n// faster\n```")),
                                   device="test-gpu")
    hit = evolve.compile_evolved(module, KERNELS / "gemm.c", st_, cache=cache, check=timed, device="test-gpu")
    assert first.edited and "// faster" in first.text
    assert hit.cache_hit and hit.edited and hit.text == first.text and not hit.verified


@pytest.mark.parametrize("answer, why", [
    (lambda code: "I cannot help with that.", "one fenced code block"),
    (lambda code: f"```cuda\n{code}\n```\n```cuda\n{code}\n```", "one fenced code block"),
    (lambda code: "```cuda\n" + code.replace('extern "C" void kernel_gemm(', 'extern "C" void other(') + "\n```",
     "drops extern"),
    (lambda code: "```cuda\n" + "x" * (evolve.MAX_EDIT_BYTES + 1) + "\n```", "bytes"),
])
def test_bad_llm_edits_are_rejected_with_a_reason(answer: Any, why: str) -> None:
    s = gpu_search(EditingClient(answer))
    s.run()
    assert not [t for t in s.trials if t.origin == "llm-cuda"]
    assert any(why in r for r in s.rejected), s.rejected


def test_no_edits_without_gpu_timing() -> None:
    client = EditingClient(lambda code: f"```cuda\n{code}\n```")
    module = frontend.load(KERNELS / "gemm.c")
    s = evolve.Search(module, "gemm.c", passing, evolve.Settings(sizes=GEMM_SIZES, rounds=2),
                      edit=evolve.llm_editor(client))
    s.run()
    assert client.prompts == [] and not [t for t in s.trials if t.origin == "llm-cuda"]


def test_a_wrong_llm_edit_fails_the_real_verifier() -> None:
    real = evolve.verify_candidate(KERNELS / "gemm.c", gpu=False, sizes=GEMM_SIZES, seed=5)

    def check(module: ir.Module, lowered: ir.Module | None, text: str) -> evolve.Checked:
        res = real(module, lowered, text)  # stages a-c, then a pretend time so that edits are asked for
        return dataclasses_replace(res, measured_ms=1.0) if res.ok else res

    wrong = EditingClient(lambda code: "```cuda\n" + code.replace("*= beta;", "*= beta * 1.5;", 1) + "\n```")
    s = gpu_search(wrong, check=check, rounds=2)
    s.s = replace(s.s, fixed=frozenset(evolve.SPACE))  # no probes in generation 0: a shorter test
    s.run()
    edit = next(t for t in s.trials if t.origin == "llm-cuda")
    assert edit.status == "fail" and edit.stage == "c", edit.reason
    assert s.best() is not None and s.best().origin == "default"
    assert s.taboo == []  # a bad edit says nothing about the schedule's knobs


def dataclasses_replace(obj: Any, **kw: Any) -> Any:
    return replace(obj, **kw)


def test_cli_evolve_with_from_text_is_a_usage_error(tmp_path: Path) -> None:
    spec = tmp_path / "s.txt"
    spec.write_text("add two vectors")
    proc = _transpile("--from-text", str(spec), "--evolve", "-o", str(tmp_path / "x.cu"), env=dict(os.environ))
    assert proc.returncode == 2 and "--from-text" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x.cu").exists()


@pytest.mark.slow
def test_cli_evolve_command_shares_a_budget_and_reports_each_file(tmp_path: Path) -> None:
    env = {**os.environ, "TRANSPILE_EVOLVE_CACHE_DIR": str(tmp_path / "evolve")}  # builds: shared
    out = tmp_path / "out"
    bad = ROOT / "tests" / "bad" / "switch.c"
    args = ["evolve", str(KERNELS / "jacobi_1d.c"), str(KERNELS / "durbin.c"), str(bad), "-o", str(out),
            "--rounds", "1", "--measure", "model", "--json"]
    first = _transpile(*args, env=env)
    assert first.returncode == 1, first.stderr  # the bad file fails, the others are written
    assert f"{bad}:4:5: error:" in first.stderr and "Traceback" not in first.stderr
    lines = [json.loads(ln) for ln in first.stdout.splitlines()]
    assert [ln["status"] for ln in lines] == ["ok", "ok", "error"]
    assert sorted(p.name for p in out.iterdir()) == ["durbin.cu", "jacobi_1d.cu"]
    assert all(ln["generations"] == 1 and not ln["cache_hit"] for ln in lines[:2])
    again = _transpile(*args[:3], "-o", str(out), "--rounds", "1", "--measure", "model", "--json", env=env)
    assert again.returncode == 0, again.stderr
    assert [json.loads(ln)["cache_hit"] for ln in again.stdout.splitlines()] == [True, True]
    same = _transpile("evolve", str(KERNELS / "gemm.c"), str(tmp_path / "gemm.c"), "-o", str(out), env=env)
    assert same.returncode == 1 and "both write gemm.cu" in same.stderr


def test_the_default_stays_unless_a_candidate_clearly_beats_it() -> None:
    # Round-robin ties are not transitive: a candidate within 3% of the default can outscore it by
    # beating a third one.  The search only leaves the default for a clear (> 3%) win.
    def check(module: ir.Module, lowered: ir.Module | None, text: str) -> evolve.Checked:
        return evolve.Checked(True, measured_ms=0.99 if "kernel_gemm_kernel1" in text else 1.0)

    module = frontend.load(KERNELS / "gemm.c")
    s = evolve.Search(module, "gemm.c", check, evolve.Settings(sizes=GEMM_SIZES, rounds=1, measure="gpu"))
    s.run()
    ranked = sorted((t for t in s.trials if t.status == "pass"), key=lambda t: (t.rank, t.cost_ms))
    assert ranked[0].measured_ms == 0.99  # the round robin alone would pick it
    assert s.best() is not None and s.best().origin == "default"

    def clear(module: ir.Module, lowered: ir.Module | None, text: str) -> evolve.Checked:
        return evolve.Checked(True, measured_ms=0.5 if "kernel_gemm_kernel1" in text else 1.0)

    s = evolve.Search(module, "gemm.c", clear, evolve.Settings(sizes=GEMM_SIZES, rounds=1, measure="gpu"))
    s.run()
    best = s.best()
    assert best is not None and best.origin != "default" and best.measured_ms == 0.5


def test_measure_auto_follows_the_gpu_detection() -> None:
    from transpile.verify import gpu

    assert evolve.resolve_measure("auto") == ("gpu" if gpu.detect().available else "model")
    assert evolve.resolve_measure("model") == "model" and evolve.resolve_measure("gpu") == "gpu"


def test_without_a_gpu_the_default_stays_unless_the_model_sees_a_clear_gain(monkeypatch: pytest.MonkeyPatch) -> None:
    # Estimates are rougher than timings: a candidate the model puts 5% ahead (beyond the 3% tie)
    # does not replace the default; one it puts 20% ahead does (evolve.MODEL_MARGIN = 10%).
    def check(module: ir.Module, lowered: ir.Module | None, text: str) -> evolve.Checked:
        return evolve.Checked(True)

    def estimates(gain: float) -> Any:
        def _model(self: evolve.Search, t: evolve.Trial, lowered: ir.Module, infos: Any) -> None:
            t.model_ms, t.ideal_ms = (1.0 if t.origin == "default" else 1.0 - gain), 0.01
        return _model

    module = frontend.load(KERNELS / "gemm.c")
    for gain, stays in ((0.05, True), (0.2, False)):
        monkeypatch.setattr(evolve.Search, "_model", estimates(gain))
        s = evolve.Search(module, "gemm.c", check, evolve.Settings(sizes=GEMM_SIZES, rounds=1, measure="model"))
        s.run()
        best = s.best()
        assert best is not None and (best.origin == "default") == stays, (gain, best.schedule.name())
        assert best.model_ms == (1.0 if stays else 0.8)


def test_the_choice_cache_can_live_apart_from_the_build_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRANSPILE_CACHE_DIR", str(tmp_path / "builds"))
    monkeypatch.delenv("TRANSPILE_EVOLVE_CACHE_DIR", raising=False)
    assert evolve.Cache().root == tmp_path / "builds" / "evolve"
    monkeypatch.setenv("TRANSPILE_EVOLVE_CACHE_DIR", str(tmp_path / "choices"))
    assert evolve.Cache().root == tmp_path / "choices"
    assert evolve.Cache(tmp_path / "given").root == tmp_path / "given"  # an explicit root wins

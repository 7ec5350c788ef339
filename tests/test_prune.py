"""Difficulty-conditioned pruning in the multi-turn loop (transpile/prune.py, transpile/rollout.py, issue 44 item 4).

A synthetic mix of easy, hopeless and medium tasks, played by the replay LLM
server (tests/llm_replay_server.py): the answer depends only on the task
named in the prompt, the sample (the request's seed) and the turn (the
answers already in the conversation), so every run is the same.  The
scheduling tests judge those answers with :func:`fake_score` (a task function
run isolated like the real one, which reads the outcome off the text: no
compiler); one end-to-end test runs ``transpile evaluate --turns --group``
with the real verifier (stages a and c, quick mode, a one-loop kernel).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.llm_replay_server import ReplayServer
from transpile.search.env import KernelEnv
from transpile.search.prune import GroupRollout, Pruning

pytest.importorskip("openai")

ROOT = Path(__file__).resolve().parent.parent
SEED = 1000
G, K = 4, 3
#: Outcome of each sample's turn-t answer, by task kind: easy passes at once, hopeless fails at
#: (a) or (b) whatever it does, medium sample s passes at turn 1 + 2s (sample 0 at once, sample 3
#: never within 2K = 6 turns) and fails at (c) before that.
MIX = {"easy1": "easy", "easy2": "easy", "hope_a": "hopeless_a", "hope_b": "hopeless_b",
       "med1": "medium", "med2": "medium", "med_half": "medium_half"}


def outcome(kind: str, sample: int, turn: int) -> str:
    """The marker the scripted model writes: PASS, FAIL_A, FAIL_B or FAIL_C."""
    if kind == "easy":
        return "PASS"
    if kind.startswith("hopeless"):
        return "FAIL_" + kind[-1].upper()
    if kind == "medium_half":  # samples 0 and 1 pass at once, 2 and 3 at turn 2
        return "PASS" if sample < 2 or turn >= 2 else "FAIL_C"
    return "PASS" if turn >= 1 + 2 * sample else "FAIL_C"


def fake_score(*, id: str, cuda: str, seed: int | None = None, **_: Any) -> dict[str, Any]:
    """A stand-in for :func:`transpile.search.evaluate.score_submission` that reads the outcome off the
    submitted text (a marker comment), with the score line's keys."""
    if "PASS" in cuda:
        stage, reached, passed = None, ["a", "b", "c"], ["a", "b", "c"]
    else:
        stage = {"FAIL_A": "a", "FAIL_B": "b"}.get(cuda.split()[-1], "c")
        reached = {"a": ["a"], "b": ["a", "b"], "c": ["a", "b", "c"]}[stage]
        passed = reached[:-1]
    from transpile.search import rewards

    rec = {"verdict": "pass" if stage is None else "fail", "stages_passed": passed}
    return {"id": id, "status": "scored", "verdict": rec["verdict"], "ok": stage is None,
            "reason": "" if stage is None else f"stage ({stage}) failed", "stage": stage, "check": None,
            "stages_reached": reached, "stages_passed": passed, "seed": seed, "timing": {},
            "rewards": {"stage": rewards.stage_reward(rec), "speed": 0.0},
            "feedback": "passed" if stage is None else f"stage ({stage}) failed"}


def responder(role: str, body: dict[str, Any]) -> str:
    """The scripted model: the task named in the first user message, the sample from the seed, the turn
    from the answers already given."""
    msgs = body["messages"]
    first = next(m["content"] for m in msgs if m["role"] == "user")
    name = next(n for n in MIX if f"void {n}(" in first or f"Task {n}:" in first)
    sample = int(body["seed"]) - SEED
    turn = 1 + sum(1 for m in msgs if m["role"] == "assistant")
    mark = outcome(MIX[name], sample, turn)
    return f"Here it is.\n```cuda\n// {name} sample {sample} turn {turn}\n// {mark}\n```\n"


def references(tmp: Path, names: tuple[str, ...] = tuple(n for n in MIX if n != "med_half")) -> list[Path]:
    """One tiny C reference per task of the mix (or of ``names``)."""
    paths = []
    for name in names:
        p = tmp / f"{name}.c"
        p.write_text(f"void {name}(int n, double x[n]) {{ for (int i = 0; i < n; i++) x[i] = 2.0 * x[i]; }}\n")
        paths.append(p)
    return paths


def rollout(tmp: Path, srv: ReplayServer, **kw: Any) -> tuple[dict[str, Any], list[dict[str, Any]],
                                                                list[dict[str, Any]]]:
    """Play the mix with the replay server; (summary, task records by task, turn lines)."""
    from transpile.llm.client import LLMClient, LLMConfig
    from transpile.search.rollout import LLMPolicy, play

    envs = [KernelEnv(p, stages="abc", timeout=30) for p in references(tmp)]
    roll = GroupRollout(envs, group=G, turns=K, seed=SEED, jobs=2, scorer="tests.test_prune:fake_score",
                        ids=list(MIX)[:len(envs)], **kw)
    cfg = LLMConfig(base_url=srv.base_url, model="replay", api_key="x", backoff=0.0, timeout=10.0,
                    temperature=1.0)
    lines: list[str] = []

    class Sink:
        def write(self, s: str) -> None:
            lines.append(s)

        def flush(self) -> None:
            pass

    summary = play(roll, LLMPolicy(LLMClient(cfg), seed=SEED), Sink())  # type: ignore[arg-type]
    recs = [json.loads(s) for s in lines]
    return summary, [r for r in recs if r["kind"] == "task"], [r for r in recs if r["kind"] == "turn"]


def test_budget_concentrates_on_the_medium_tasks(tmp_path: Path) -> None:
    with ReplayServer(respond=responder) as srv:
        on, tasks_on, turns_on = rollout(tmp_path, srv, pruning=Pruning())
        off, tasks_off, _ = rollout(tmp_path, srv, pruning=None)
    by = {r["task"]: r for r in tasks_on}
    assert {t: r["difficulty"] for t, r in by.items()} == {
        "easy1": "easy", "easy2": "easy", "hope_a": "hopeless", "hope_b": "hopeless", "med1": "medium",
        "med2": "medium"}
    assert by["hope_a"]["first_turn"] == {"pass": 0.0, "fail_ab": 1.0, "group": G}
    assert by["med1"]["first_turn"] == {"pass": 0.25, "fail_ab": 0.0, "group": G}
    # Easy: every episode passed at turn 1.  Hopeless: pruned after turn 1, 4 x (K - 1) = 8 turns saved;
    # the (b) failures compiled (nvcc), the (a) failures did not.
    for t in ("easy1", "easy2", "hope_a", "hope_b"):
        assert by[t]["pruned"] and by[t]["verifications"] == G and by[t]["turns"] == 1, by[t]
    assert by["easy1"]["saved"] == {"verifications": 0, "compilations": 0}
    assert by["hope_a"]["saved"] == {"verifications": 8, "compilations": 0}
    assert by["hope_b"]["saved"] == {"verifications": 8, "compilations": 8}
    assert [e["end"] for e in by["hope_a"]["episodes"]] == ["pruned"] * G
    # Medium: sample s passes at turn 1 + 2s; sample 3 would pass at 7 and stops at max_turns 2K = 6.
    for t in ("med1", "med2"):
        assert not by[t]["pruned"] and by[t]["turns"] == 2 * K
        assert [(e["turns"], e["end"]) for e in by[t]["episodes"]] == [
            (1, "passed"), (3, "passed"), (5, "passed"), (6, "max_turns")]
        assert by[t]["verifications"] == 15 and by[t]["extra"] == 15 - G * K
    assert on["budget"] == 6 * G * K == 72 and on["spent"] == 46 and on["unspent"] == 26
    assert on["saved"] == {"verifications": 16, "compilations": 8} and on["reassigned"] == 6
    assert on["by_difficulty"] == {"easy": {"tasks": 2, "verifications": 8},
                                   "medium": {"tasks": 2, "verifications": 30},
                                   "hopeless": {"tasks": 2, "verifications": 8}}
    # The plain run (--no-prune: K turns each): hopeless tasks eat 2 x 12 verifications, medium gets 2 x 10.
    assert off["spent"] == 52 and off["pruned"] == [] and off["max_turns"] == K
    assert off["by_difficulty"]["hopeless"]["verifications"] == 24
    assert off["by_difficulty"]["medium"]["verifications"] == 20
    assert on["by_difficulty"]["medium"]["verifications"] / on["spent"] > 0.6 > \
        off["by_difficulty"]["medium"]["verifications"] / off["spent"]
    # The tournament reward, within each group, for each turn: medium turn 1, one pass and three (c)
    # failures; turn 3, two passes (sample 0 keeps its turn-1 pass) and two failures.
    med = {(r["sample"], r["turn"]): r for r in turns_on if r["task"] == "med1"}
    assert med[(0, 1)]["tournament"] == {"rank": 1.0, "reward": 1.0}
    assert med[(1, 1)]["tournament"] == {"rank": 3.0, "reward": pytest.approx(1 / 3, abs=1e-6)}
    assert med[(1, 3)]["tournament"] == {"rank": 1.5, "reward": pytest.approx(2.5 / 3, abs=1e-6)}
    assert med[(2, 3)]["tournament"] == {"rank": 3.5, "reward": pytest.approx(0.5 / 3, abs=1e-6)}
    assert {r["tournament"]["reward"] for r in turns_on if r["task"] == "easy1"} == {0.5}  # all tie
    # One verifier seed per task and turn: the group is judged on the same inputs.
    assert len({med[(s, 1)]["seed"] for s in range(G)}) == 1 and med[(1, 1)]["seed"] != med[(1, 2)]["seed"]
    # The final ranks within the group.
    assert [e["tournament"]["rank"] for e in by["med1"]["episodes"]] == [2.0, 2.0, 2.0, 4.0]


def test_thresholds_budget_and_errors(tmp_path: Path) -> None:
    """A lower pass threshold prunes med (1 of 4 passing >= 0.25); a tight budget is spent on whole
    groups, most uncertain first; bad options are refused."""
    def play_direct(envs: list[KernelEnv], **kw: Any) -> GroupRollout:
        roll = GroupRollout(envs, group=G, turns=K, seed=SEED, scorer="tests.test_prune:fake_score",
                            ids=list(MIX)[:len(envs)], **kw)
        obs = roll.reset()
        while obs:
            obs, _ = roll.step({k: f"// {outcome(MIX[roll.ids[k[0]]], k[1], roll.episodes[k].env.turn + 1)}"
                                for k in obs})
        return roll

    envs = [KernelEnv(p, stages="abc", timeout=30) for p in references(tmp_path)]
    low = play_direct(envs, pruning=Pruning(pass_at=0.25)).task_records()
    assert [r["task"] for r in low if r["pruned"]] == list(MIX)[:6]
    med = next(r for r in low if r["task"] == "med1")
    assert med["difficulty"] == "easy" and med["saved"]["verifications"] == 3 * (K - 1)
    assert [e["end"] for e in med["episodes"]] == ["passed", "pruned", "pruned", "pruned"]
    # Budget 36: turn 1 takes 24; rounds 2 and 3 take 6 each (three live samples in each medium group);
    # then the pool is empty and the two samples still failing end for lack of budget.
    tight = play_direct(envs, pruning=Pruning(), budget=36)
    s = tight.summary()
    assert s["spent"] == 36 and s["unspent"] == 0
    med = next(r for r in tight.task_records() if r["task"] == "med2")
    assert [(e["turns"], e["end"]) for e in med["episodes"]] == [
        (1, "passed"), (3, "passed"), (3, "budget"), (3, "budget")]
    # Budget 11: turn 1 takes 8 and leaves 3, enough for med1's three live samples (first in the list)
    # or med_half's two, not both; the more uncertain group (half of it passed turn 1) goes first.
    half = tmp_path / "half"
    half.mkdir()
    envs2 = [KernelEnv(p, stages="abc", timeout=30) for p in references(half, ("med1", "med_half"))]
    roll = GroupRollout(envs2, group=G, turns=K, seed=SEED, scorer="tests.test_prune:fake_score",
                        budget=2 * G + 3, ids=["med1", "med_half"])
    obs = roll.reset()
    while obs:
        obs, _ = roll.step({k: f"// {outcome(MIX[roll.ids[k[0]]], k[1], roll.episodes[k].env.turn + 1)}"
                            for k in obs})
    recs = {r["task"]: r for r in roll.task_records()}
    assert recs["med_half"]["verifications"] == G + 2 and recs["med1"]["verifications"] == G
    assert [e["end"] for e in recs["med1"]["episodes"]] == ["passed", "budget", "budget", "budget"]
    with pytest.raises(ValueError, match="first turn of every sample"):
        GroupRollout(envs, group=G, turns=K, budget=23)
    with pytest.raises(ValueError, match=r"pass_at must be in \(0, 1\]"):
        Pruning(pass_at=0.0)
    with pytest.raises(ValueError, match="this round verifies"):
        roll = GroupRollout(envs[:1], group=2, turns=1, scorer="tests.test_prune:fake_score")
        roll.reset()
        roll.step({(0, 0): "// PASS"})


def test_cli_usage_errors(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from transpile.cli.evaluate import evaluate_cmd

    ref = references(tmp_path)[0]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "t", "reference": ref.name}) + "\n{oops\n")
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "TRANSPILE_MODEL": "replay"}
    run = CliRunner().invoke(evaluate_cmd, [str(tasks), "--turns", "2", "--group", "2"], env=env)
    assert run.exit_code == 1 and f"{tasks}:2:2: error: not JSON" in run.output, run.output
    tasks.write_text(json.dumps({"id": "t", "reference": ref.name}) + "\n")
    for args, msg in ((["--budget", "1"], "--budget 1 does not pay the first turn of every sample"),
                      (["--max-turns", "1"], "--max-turns 1 is less than --turns 2"),
                      (["--no-prune", "--prune-fail", "0.5"], "--prune-pass and --prune-fail need pruning on")):
        run = CliRunner().invoke(evaluate_cmd, [str(tasks), "--turns", "2", "--group", "2", *args], env=env)
        assert run.exit_code == 1 and f"transpile: error: {msg}" in run.output, run.output
    run = CliRunner().invoke(evaluate_cmd, [str(tasks), "--budget", "4", "--model", "m"], env=env)
    assert run.exit_code == 1 and "--budget, --model: only with --turns or --group" in run.output, run.output
    tasks.write_text(json.dumps({"id": "t", "cuda": "x", "reference": ref.name}) + "\n")
    run = CliRunner().invoke(evaluate_cmd, [str(tasks), "--turns", "2"], env=env)
    assert run.exit_code == 1 and f"{tasks}:1:1: error: task t: with --turns/--group the model writes" in run.output


GOOD = 'extern "C" void scale(int n, double *x) {\n  for (int i = 0; i < n; i++) x[i] = 2.0 * x[i];\n}\n'
WRONG = GOOD.replace("2.0 *", "3.0 *")
BAD_SIGNATURE = 'extern "C" void scale(int n, float *x) {\n}\n'


def real_responder(role: str, body: dict[str, Any]) -> str:
    """The scripted model for the end-to-end run: easy always right, hopeless always the wrong
    signature, medium sample 1 wrong at turn 1 and right at turn 2."""
    msgs = body["messages"]
    first = next(m["content"] for m in msgs if m["role"] == "user")
    sample = int(body["seed"]) - SEED
    turn = 1 + sum(1 for m in msgs if m["role"] == "assistant")
    text = (GOOD if "Task easy" in first else BAD_SIGNATURE if "Task hopeless" in first
            else WRONG if (sample, turn) == (1, 1) else GOOD)
    return f"```cuda\n{text}```\n"


@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                    reason="the simulator and the reference need g++ and gcc")
def test_evaluate_turns_group_end_to_end(tmp_path: Path) -> None:
    """``transpile evaluate --turns 2 --group 2`` with the real verifier (stages a and c, quick)."""
    (tmp_path / "scale.c").write_text(
        "void scale(int n, double x[n]) { for (int i = 0; i < n; i++) x[i] = 2.0 * x[i]; }\n")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": k, "reference": "scale.c", "spec": f"Task {k}: double x."}) + "\n"
                             for k in ("easy", "hopeless", "medium")))
    out = tmp_path / "out.jsonl"
    with ReplayServer(respond=real_responder) as srv:
        run = subprocess.run(
            [sys.executable, "-m", "transpile.cli", "evaluate", str(tasks), "-o", str(out), "--turns", "2",
             "--group", "2", "--stages", "ac", "--mode", "quick", "--no-gpu", "--seed", str(SEED), "--jobs", "2",
             "--timeout", "120", "--llm-base-url", srv.base_url, "--model", "replay"],
            capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stderr
    recs = [json.loads(s) for s in out.read_text().splitlines()]
    turns = [r for r in recs if r["kind"] == "turn"]
    tasks_ = {r["task"]: r for r in recs if r["kind"] == "task"}
    summary = recs[-1]
    assert summary["kind"] == "summary" and summary["pruned"] == ["easy", "hopeless"]
    assert [(r["task"], r["sample"], r["turn"], r["verdict"], r["stage"]) for r in turns] == [
        ("easy", 0, 1, "pass", None), ("easy", 1, 1, "pass", None),
        ("hopeless", 0, 1, "fail", "a"), ("hopeless", 1, 1, "fail", "a"),
        ("medium", 0, 1, "pass", None), ("medium", 1, 1, "fail", "c"), ("medium", 1, 2, "pass", None)]
    assert turns[5]["check"] == "mismatch" and turns[5]["tournament"] == {"rank": 2.0, "reward": 0.0}
    assert turns[6]["tournament"] == {"rank": 1.5, "reward": 0.5}
    assert tasks_["hopeless"]["difficulty"] == "hopeless" and tasks_["hopeless"]["saved"]["verifications"] == 2
    assert tasks_["medium"]["difficulty"] == "medium" and tasks_["medium"]["verifications"] == 3
    assert summary["budget"] == 12 and summary["spent"] == 7
    assert "7 of 12 verifications" in run.stderr

"""Rewards (transpile/search/rewards.py): partial credit by stage, speed from measured time, the
tournament's ranks (deterministic, ties averaged, correctness before speed), and
``transpile verify --group --json``."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import evaluate_helpers as h
from transpile.search.rewards import compare, speed_key, speed_reward, stage_reward, tournament

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")


def rec(passed: str, verdict: str = "fail", ms: float | None = None, ref_ms: float | None = None) -> dict[str, Any]:
    """A verifier record with the fields the rewards read."""
    timing: dict[str, Any] = {}
    if ms is not None:
        timing["median_ms"] = ms
    if ref_ms is not None:
        timing["reference_ms"] = [ref_ms, ref_ms * 1.1, ref_ms * 0.9]
    return {"verdict": verdict, "stages_passed": list(passed), "timing": timing}


PASS_ABC = rec("abc", "pass")


def test_stage_reward_is_partial_credit_by_stage() -> None:
    assert stage_reward(None) == 0.0
    assert stage_reward(rec("")) == 0.0
    assert stage_reward(rec("a")) == 0.1
    assert stage_reward(rec("ab")) == 0.3
    assert stage_reward(rec("abc")) == 0.7
    assert stage_reward(rec("abcde")) == 0.9
    assert stage_reward(rec("ab", "unverified")) == 0.3
    assert stage_reward(rec("ab", "inconclusive")) == 0.3
    assert stage_reward(PASS_ABC) == stage_reward(rec("abcdef", "pass")) == 1.0
    # Even a record claiming every stage passed scores below a pass unless its verdict is one.
    assert stage_reward(rec("abcdef", "fail")) < 1.0


def test_stage_reward_reads_reports(tmp_path: Path) -> None:
    from transpile.verify.report import FAIL, PASS, Report

    r = Report(kernel="k", candidate="k.cu", reference="k.c", seed=1)
    r.stage("a").status = r.stage("b").status = PASS
    r.stage("c").status = FAIL
    assert stage_reward(r) == 0.3 == stage_reward(r.to_json())


def test_speed_reward_is_log_speedup_when_measured() -> None:
    assert speed_reward(PASS_ABC) == 0.0  # not timed
    assert speed_reward(rec("abcdef", "pass", ms=1.0, ref_ms=32.0)) == 0.5  # log2(32) / log2(1024)
    assert speed_reward(rec("abcdef", "pass", ms=1.0, ref_ms=0.5)) == 0.0  # slower than gcc: no credit
    assert speed_reward(rec("abcdef", "pass", ms=1e-6, ref_ms=1e3)) == 1.0  # clipped
    assert speed_reward(rec("abcdef", "pass", ms=2.0), baseline=8.0) == 0.2
    assert speed_reward(rec("abcdef", "pass", ms=2.0), baseline=rec("abcdef", "pass", ms=64.0)) == 0.5
    assert speed_reward(rec("abcdef", "pass", ms=2.0), baseline=PASS_ABC) == 0.0  # baseline not timed
    assert speed_reward(rec("abcde", "fail", ms=1.0, ref_ms=32.0)) == 0.0  # failing: no speed credit
    assert speed_key(rec("abcdef", "pass", ms=2.5)) == 2.5 and speed_key(PASS_ABC) is None


def test_compare_puts_correctness_before_speed() -> None:
    slow_ok, fast_ok = rec("abcdef", "pass", ms=100.0), rec("abcdef", "pass", ms=1.0)
    fast_bad = rec("abcde", "fail", ms=0.001)
    assert compare(slow_ok, fast_bad) == 1 and compare(fast_bad, slow_ok) == -1
    assert compare(fast_ok, slow_ok) == 1 and compare(slow_ok, fast_ok) == -1
    assert compare(rec("abc"), rec("a")) == 1  # failing later beats failing earlier
    assert compare(rec("ab"), rec("ab", "unverified")) == 0
    assert compare(fast_ok, rec("abcdef", "pass", ms=1.01)) == 0  # within timing noise
    assert compare(fast_ok, PASS_ABC) == 0  # one time unknown: equal
    assert compare(None, rec("")) == 0 and compare(rec("a"), None) == 1


def test_tournament_ranks_ties_and_rewards() -> None:
    assert tournament([]) == []
    assert tournament([rec("a")]) == [(1.0, 1.0)]
    # Two passes without timing tie for first, a stage-(c) failure is third, None (a hang) last.
    assert tournament([rec("ab"), PASS_ABC, None, PASS_ABC]) == [(3.0, 1 / 3), (1.5, 5 / 6), (4.0, 0.0),
                                                                   (1.5, 5 / 6)]
    # Everyone equal: every rank is the average, every reward the middle.
    assert tournament([rec("ab")] * 3) == [(2.0, 0.5)] * 3
    # With times, passing candidates are ordered by speed; correctness still dominates.
    group = [rec("abcdef", "pass", ms=4.0), rec("abcdef", "pass", ms=1.0), rec("abcde", "fail", ms=0.01),
             rec("abcdef", "pass", ms=2.0)]
    assert [r for r, _ in tournament(group)] == [3.0, 1.0, 4.0, 2.0]
    assert [w for _, w in tournament(group)] == [1 / 3, 1.0, 0.0, 2 / 3]


def test_tournament_is_deterministic_and_order_free() -> None:
    group = [rec("abcdef", "pass", ms=3.0), rec("abc"), rec("ab"), PASS_ABC, rec("abcdef", "pass", ms=1.0),
             rec("ab"), None]
    expected = tournament(group)
    assert tournament(group) == expected
    for perm in itertools.islice(itertools.permutations(range(len(group))), 0, 5040, 97):
        got = tournament([group[i] for i in perm])
        assert [got[perm.index(i)] for i in range(len(group))] == expected
    # A better-correctness candidate always outranks a worse one, whatever the times.
    for i, j in itertools.permutations(range(len(group)), 2):
        if stage_reward(group[i]) > stage_reward(group[j]):
            assert expected[i][0] < expected[j][0], (i, j)


@pytest.mark.slow
@needs_gxx
def test_verify_group_json_ranks_candidates(tmp_path: Path) -> None:
    files = h.emitted(("gemm", "atax"))
    cands = [files["gemm"], h.CHEATS / "gemm_float_acc.cu", h.CHEATS / "ok_gemm_tiled.cu",
             h.CHEATS / "gemm_first_tile.cu", files["atax"]]
    run = subprocess.run([sys.executable, "-m", "transpile.cli", "verify", "--group", *map(str, cands),
                          "--against", str(h.KERNELS / "gemm.c"), "--stages", "abc", "--seed", "11", "--jobs", "2",
                          "--json", "--no-profile", "-q"], capture_output=True, text=True, timeout=600)
    # --no-profile: the two passing candidates tie (no time, no profile); with --json's default profile
    # the structural reward would break the tie (tests/test_profile.py).
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert [r["candidate"] for r in out] == list(map(str, cands))
    assert [r["verdict"] for r in out] == ["pass", "fail", "pass", "fail", "fail"]
    assert [r["stage"] for r in out] == [None, "c", None, "c", "a"]
    assert [r["rank"] for r in out] == [1.5, 3.5, 1.5, 3.5, 5.0]
    assert [r["reward"] for r in out] == [0.875, 0.375, 0.875, 0.375, 0.0]
    assert {r["seed"] for r in out} == {11}  # one seed: the same inputs for every candidate
    table = subprocess.run([sys.executable, "-m", "transpile.cli", "verify", "--group", *map(str, cands[:2]),
                            "--against", str(h.KERNELS / "gemm.c"), "--stages", "abc", "-q"],
                           capture_output=True, text=True, timeout=600)
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert rows[0].split()[:3] == ["rank", "reward", "verdict"]
    assert rows[1].split()[:3] == ["1", "1.000", "pass"] and rows[1].split()[3] == str(cands[0])
    assert rows[2].split()[:3] == ["2", "0.000", "fail"]
    two = subprocess.run([sys.executable, "-m", "transpile.cli", "verify", *map(str, cands[:2]),
                          "--against", str(h.KERNELS / "gemm.c")], capture_output=True, text=True)
    assert two.returncode == 2 and "several need --group" in two.stderr

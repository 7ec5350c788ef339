"""The structural profile (transpile/verify/profile.py, the simulator's cuda_sim_profile.h) and the
structural reward (transpile/rewards.py): pairs of kernels with known structure
(tests/profile_pairs) are ordered as a GPU would order them, the figures are deterministic, and
``transpile verify --profile`` records them under the ``profile`` key.

Cheap: one simulator build and one small profiled call per pair kernel (n = 64), one quick
verification for the record's key.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from transpile.search.rewards import compare, structural_reward, structural_scores, tournament
from transpile.verify.profile import SM90, flop_weights, occupancy, profile_function, summarize

PAIRS = Path(__file__).resolve().parent / "profile_pairs"
N = 64


def _args(name: str) -> tuple[Any, ...]:
    """The drop-in's arguments for pair kernel ``name`` at n = N (inputs seeded)."""
    rng = np.random.default_rng(11)
    if name.startswith("copy"):
        return N, N, rng.random((N, N), dtype=np.float32), np.zeros((N, N), np.float32)
    if name.startswith("transpose"):
        return N, rng.random((N, N), dtype=np.float32), np.zeros((N, N), np.float32)
    if name.startswith("branch"):
        return N * N, rng.random(N * N, dtype=np.float32), np.zeros(N * N, np.float32)
    return N * N, rng.random(N * N), np.zeros(1)


def _raw(name: str) -> list[dict[str, Any]]:
    from transpile.verify.simstage import build_sim

    library = str(build_sim(PAIRS / f"{name}.cu").library)
    return profile_function(library, name.split("_")[0], *_args(name))


@cache
def profiled(name: str) -> dict[str, Any]:
    """A passing record carrying the profile of pair kernel ``name`` (launch shape only: no ptxas)."""
    from transpile.verify.simstage import build_sim

    library = str(build_sim(PAIRS / f"{name}.cu").library)
    return {"verdict": "pass", "stages_passed": ["a", "c"], "profile": summarize(_raw(name), [], library)}


def overall(name: str) -> dict[str, Any]:
    """The overall figures of pair kernel ``name``'s profile."""
    return profiled(name)["profile"]["overall"]


def assert_better(good: str, bad: str) -> None:
    """``good`` outranks ``bad`` by the structural reward, in compare and in a tournament."""
    a, b = profiled(good), profiled(bad)
    assert structural_reward(a) > structural_reward(b) + 0.01, (structural_scores(a), structural_scores(b))
    assert compare(a, b) == 1 and compare(b, a) == -1
    assert tournament([b, a]) == [(2.0, 0.0), (1.0, 1.0)]


def test_coalesced_copy_beats_strided() -> None:
    good, bad = overall("copy_coalesced"), overall("copy_strided")
    assert good["sectors_per_request"] == 4.0 and good["sector_efficiency"] == 1.0  # 32 floats: 4 sectors
    assert bad["sectors_per_request"] == 32.0 and bad["sector_efficiency"] == 0.125  # a sector a lane
    assert good["global_bytes"] == bad["global_bytes"] == 2 * N * N * 4
    assert_better("copy_coalesced", "copy_strided")


def test_padded_transpose_has_no_bank_conflicts() -> None:
    good, bad = overall("transpose_padded"), overall("transpose_unpadded")
    assert good["replays_per_shared_access"] == 0.0 and good["shared_efficiency"] == 1.0
    # The column read of an unpadded tile: 32 lanes in one bank (31 replays); the row write: none.
    assert bad["replays_per_shared_access"] == 15.5
    assert good["sector_efficiency"] == bad["sector_efficiency"] == 1.0
    assert good["barriers_per_thread"] == bad["barriers_per_thread"] == 1.0
    assert good["atomics_per_thread"] == 0.0  # the __shared__ registration's static guard is not counted
    assert_better("transpose_padded", "transpose_unpadded")


def test_uniform_branch_beats_divergent() -> None:
    good, bad = overall("branch_uniform"), overall("branch_divergent")
    assert good["divergent_fraction"] == 0.0 and bad["divergent_fraction"] == 1.0
    assert good["sector_efficiency"] == bad["sector_efficiency"] == 1.0  # the layouts are equally compact
    assert good["flops"] == bad["flops"] == N * N  # one mul or one add an element
    assert_better("branch_uniform", "branch_divergent")


def test_tree_reduction_beats_an_atomic_per_element() -> None:
    good, bad = overall("total_tree"), overall("total_atomic")
    assert good["atomics_per_thread"] == round(1 / 256, 4) and bad["atomics_per_thread"] == 1.0
    assert good["barriers_per_thread"] == 9.0  # one after the load, one per halving step
    assert good["divergent_fraction"] > 0.2  # the last steps (t < s < 32) split warps
    assert_better("total_tree", "total_atomic")


def test_profile_is_deterministic() -> None:
    first = profiled("transpose_unpadded")["profile"]
    from transpile.verify.simstage import build_sim

    library = str(build_sim(PAIRS / "transpose_unpadded.cu").library)
    assert summarize(_raw("transpose_unpadded"), [], library) == first
    kernel = first["kernels"][0]
    assert kernel["kernel"] == "transpose_tile" and kernel["grid"] == [2, 2, 1] and kernel["block"] == [32, 8, 1]
    assert kernel["blocks_profiled"] == kernel["blocks"] == 4 and kernel["dropped_accesses"] == 0


def test_occupancy_from_registers_shared_memory_and_shape() -> None:
    assert occupancy(256, 64, 0) == {"blocks_per_sm": 4, "warps_per_sm": 32, "occupancy": 0.5, "limit": "registers"}
    assert occupancy(1024, 32, 0)["occupancy"] == 1.0
    assert occupancy(128, 16, 100 * 1024) == {"blocks_per_sm": 2, "warps_per_sm": 8, "occupancy": 0.125,
                                              "limit": "shared"}
    assert occupancy(32, None, 0) == {"blocks_per_sm": SM90.max_blocks_per_sm, "warps_per_sm": 32,
                                      "occupancy": 0.5, "limit": "blocks"}


def test_flops_count_arithmetic_instructions() -> None:
    assert [flop_weights(m) for m in ("addss", "vmulsd", "vfmadd231sd", "mulps", "divpd", "movss", "ucomiss",
                                      "cvtss2sd", "sqrtsd", "addl")] == [1, 1, 2, 4, 2, 0, 0, 0, 1, 0]


def test_structural_reward_needs_a_profile() -> None:
    assert structural_reward({"verdict": "pass"}) is None and structural_reward(None) is None
    plain = {"verdict": "pass", "stages_passed": ["a", "b", "c"]}
    assert compare(plain, profiled("copy_strided")) == 0  # one profile missing: a tie, as before
    timed = {**profiled("copy_strided"), "timing": {"median_ms": 1.0}}
    assert compare(profiled("copy_coalesced"), timed) == 0  # a time measured: the profile breaks no tie


def test_verify_records_the_profile_under_its_key() -> None:
    from transpile.search.evaluate import score_submission
    from transpile.verify.cli import verify_cmd

    # What `transpile verify --group --profile` runs for each candidate, in quick mode (CI's budget).
    lines = [score_submission(id=name, reference=str(PAIRS / "copy.c"), cuda_path=str(PAIRS / f"{name}.cu"),
                              stages="abc", mode="quick", seed=3, gpu=False, report=True, profile=True)
             for name in ("copy_strided", "copy_coalesced")]
    for line in lines:
        assert line["verdict"] == "pass", line["reason"]
        assert line["profile"] == line["report"]["profile"] and "profile at " in line["feedback"]
    prof = lines[1]["profile"]
    assert prof["version"] == 1 and prof["arch"] == "sm_90" and prof["shape"]
    assert prof["kernels"][0]["kernel"] == "copy_rows"
    assert set(prof["overall"]) >= {"sector_efficiency", "replays_per_shared_access", "divergent_fraction",
                                    "barriers_per_thread", "atomics_per_thread", "intensity", "occupancy"}
    assert [rank for rank, _ in tournament(lines)] == [2.0, 1.0]  # no time measured: the profile decides
    assert "with --group it breaks ties" in " ".join(CliRunner().invoke(verify_cmd, ["--help"]).output.split())


def test_verify_json_carries_the_profile_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """`transpile verify --json` asks for the profile unless --no-profile (issue 44: the record of any
    accepted candidate carries it; test_verify_records_the_profile_under_its_key checks the record)."""
    from transpile.verify import stages
    from transpile.verify.cli import verify_cmd

    asked: list[bool] = []

    def fake(kernel: Path, reference: Path, **kw: object) -> object:
        asked.append(kw["options"].profile)  # type: ignore[attr-defined]
        raise SystemExit(0)

    monkeypatch.setattr(stages, "verify_file", fake)
    args = [str(PAIRS / "copy_coalesced.cu"), "--against", str(PAIRS / "copy.c"), "--no-gpu", "-q"]
    for extra in (["--json"], ["--json", "--no-profile"], [], ["--profile"]):
        CliRunner().invoke(verify_cmd, [*args, *extra])
    assert asked == [True, False, False, True]

"""The multi-turn environment (transpile/search/env.py): an episode where a wrong submission is
followed by a fixed one (rewards increase, the feedback names the failing stage, the fixed one
ends the episode), turn limits, spec-text tasks, and a hang costing a turn, not the caller."""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from tests import evaluate_helpers as h
from transpile.search.env import KernelEnv

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None,
                               reason="the simulator and the reference need g++ and gcc")
GEMM = h.KERNELS / "gemm.c"
SIGNATURE = ('extern "C" void kernel_gemm(int ni, int nj, int nk, double alpha, double beta, double *C, '
             'double *A, double *B)')


@pytest.fixture(scope="module")
def files() -> dict[str, Path]:
    return h.emitted(("gemm",))


def test_reset_shows_the_source_and_the_dropin_signature() -> None:
    env = KernelEnv(GEMM)
    obs = env.reset()
    assert GEMM.read_text().strip() in obs and SIGNATURE in obs
    spec = KernelEnv("Compute C = alpha*A*B + beta*C for an ni x nk matrix A and nk x nj B.", reference=GEMM)
    obs = spec.reset()
    assert obs.startswith("Compute C = alpha*A*B") and SIGNATURE in obs and "#pragma scop" not in obs
    with pytest.raises(ValueError, match="reference="):
        KernelEnv("Compute C = alpha*A*B.")
    with pytest.raises(RuntimeError, match="reset"):
        KernelEnv(GEMM).step("")


@needs_gxx
def test_episode_wrong_then_fixed(files: dict[str, Path]) -> None:
    env = KernelEnv(str(GEMM), stages="abc", max_turns=4, timeout=120)
    env.reset()
    wrong = (h.CHEATS / "gemm_skip_last_row.cu").read_text()
    obs, r1, done, info = env.step(wrong)
    assert not done and info["verdict"] == "fail"
    assert (info["stage"], info["check"]) == ("c", "unwritten-output"), info["feedback"]
    assert info["feedback"].startswith("stage (c) CPU simulation of the CUDA")
    assert "(c) CPU simulation of the CUDA: fail" in info["feedback"]
    assert not re.findall(r"\d\.\d{3,}", info["feedback"]), info["feedback"]  # errors only, never values
    assert obs.startswith(info["feedback"]) and "Fix the CUDA file" in obs
    assert info["report"]["stages"]["c"]["status"] == "fail"
    obs, r2, done, info = env.step(files["gemm"].read_text())
    assert done and info["verdict"] == "pass" and info["stage"] is None, info["feedback"]
    assert r1 == pytest.approx(0.3) and r2 == pytest.approx(1.0) and r2 > r1
    assert [t["turn"] for t in env.history] == [1, 2]
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(wrong)
    env.reset()
    assert env.turn == 0 and not env.done


@needs_gxx
def test_turn_limit_and_front_end_failure() -> None:
    env = KernelEnv(GEMM, stages="abc", max_turns=1, timeout=60)
    env.reset()
    obs, reward, done, info = env.step("int main(void) { return 0; }\n")
    assert done and reward == 0.0 and info["stage"] == "a" and info["check"] == "signature"
    assert "(a) front end and IR checks: fail [signature]" in info["feedback"]


@pytest.mark.slow
@needs_gxx
def test_a_hanging_submission_costs_a_turn(files: dict[str, Path]) -> None:
    env = KernelEnv(GEMM, stages="abc", timeout=30)  # the simulator's timeout is a third of it
    env.reset()
    t0 = time.monotonic()
    obs, reward, done, info = env.step(h.hang_cuda(files["gemm"]))
    assert time.monotonic() - t0 < 45
    assert not done and reward < 1.0 and "did not finish within" in info["feedback"], info["feedback"]
    # Normally the simulator's timeout names stage (c); on a loaded machine nvcc may eat the
    # budget first, and then the evaluator's kill is what reports it.
    assert (info["stage"], info["check"]) == ("c", "timeout") or info["verdict"] == "timeout", info

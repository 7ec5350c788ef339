"""``transpile repair``: verifier failure report -> model -> re-verified, bounded; against the replay server."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("openai")

from tests.llm_replay_server import ReplayServer  # noqa: E402
from tests.test_llm import SPECS, srv_env, transpile  # noqa: E402
from transpile.llm.client import LLMConfig  # noqa: E402
from transpile.llm.fromtext import compile_from_text  # noqa: E402
from transpile.llm.repair import extract_cuda  # noqa: E402

REF = SPECS / "saxpy.ir"


@pytest.fixture(scope="module")
def good_cu() -> str:
    return compile_from_text(REF, LLMConfig(), verify=False).output


@pytest.mark.slow
def test_repair_after_two_rounds(tmp_path: Path, good_cu: str) -> None:
    broken = good_cu.replace("a * X[i] + Y[i]", "a * X[i] - Y[i]")
    assert broken != good_cu
    k = tmp_path / "k.cu"
    k.write_text(broken)
    still = broken.replace("- Y[i]", "* Y[i]")
    with ReplayServer({"repair": [f"```cuda\n{still}```", f"Fixed:\n```cuda\n{good_cu}```"]}) as srv:
        p = transpile("repair", str(k), "--against", str(REF), "--seed", "5", env=srv_env(srv), cwd=tmp_path)
        asked = srv.of("repair")
    assert p.returncode == 0, p.stderr
    assert "verified after 2 round(s)" in p.stderr
    assert (tmp_path / "k.repaired.cu").read_text() == good_cu
    assert k.read_text() == broken  # the input is untouched
    first = asked[0]["messages"][1]["content"]
    assert "stage (c)" in first and "seed 5" in first and "kernel saxpy" in first  # the report reached it
    assert "rejected" in asked[1]["messages"][-1]["content"]


def test_no_verified_repair(tmp_path: Path, good_cu: str) -> None:
    broken = good_cu.replace("a * X[i] + Y[i]", "a * X[i] - Y[i]")
    k = tmp_path / "k.cu"
    k.write_text(broken)
    hostile = ["no code at all", "```cuda\n#include \"/etc/passwd\"\n```\nsave as ../../k.cu"]
    with ReplayServer({"repair": hostile}) as srv:
        p = transpile("repair", str(k), "--against", str(REF), "--llm-rounds", "2", env=srv_env(srv), cwd=tmp_path)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "no verified repair" in p.stderr and "left untouched" in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["k.cu"] and k.read_text() == broken


def test_already_verified_needs_no_model(tmp_path: Path, good_cu: str) -> None:
    k = tmp_path / "k.cu"
    k.write_text(good_cu)
    with ReplayServer({"repair": ["```cuda\nbroken\n```"]}) as srv:
        p = transpile("repair", str(k), "--against", str(REF), env=srv_env(srv), cwd=tmp_path)
        assert srv.of("repair") == []
    assert p.returncode == 0 and "already verifies" in p.stderr


def test_extract_cuda() -> None:
    assert extract_cuda("x\n```cuda\nint a;\n```") == "int a;\n"
    assert extract_cuda("```ir\nk\n```\n```c++\nint b;\n```") == "int b;\n"
    assert extract_cuda("none") is None

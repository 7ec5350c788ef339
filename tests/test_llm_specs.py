"""The spec library (examples/specs/): every hand-written answer is valid IR that lowers and verifies.

The ``.ir`` files are what the replay server answers for the ``.txt`` specs;
a real model's answers would have to meet the same bar.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from transpile import cuda, pipeline
from transpile.ir import check as ircheck
from transpile.ir import text
from transpile.llm import crosscheck
from transpile.llm.generate import check_ir

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "examples" / "specs"
NAMES = sorted(p.stem for p in SPECS.glob("*.txt"))


def test_library_is_complete() -> None:
    assert len(NAMES) >= 20
    assert sorted(p.stem for p in SPECS.glob("*.ir")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_answer_parses_checks_lowers(name: str) -> None:
    source = (SPECS / f"{name}.ir").read_text()
    module = check_ir(source, f"{name}.ir")
    assert module.kernels[0].name == name
    assert text.parse(text.show(module)) == module
    lowered = pipeline.lower(module)
    ircheck.check(lowered)
    assert f'extern "C" void {name}(' in cuda.emit(lowered, source=f"{name}.txt")


@pytest.mark.parametrize("name", NAMES)
def test_answer_agrees_with_itself(name: str) -> None:
    """The cross-check's own sanity: a program agrees with itself on every synthesized input."""
    m = text.parse((SPECS / f"{name}.ir").read_text())
    out = crosscheck.compare(m, m, seed=3)
    assert out.evidence is None and out.inputs > 0


@pytest.mark.sample(3)
@pytest.mark.parametrize("name", NAMES)
def test_answer_verifies(name: str) -> None:
    from transpile.llm.client import LLMConfig
    from transpile.llm.fromtext import compile_from_text

    res = compile_from_text(SPECS / f"{name}.ir", LLMConfig())
    assert res.verified.startswith(f"{name}: pass (stages passed: abc"), res.verified


def _break(source: str) -> str:
    """A typical model slip: the first statement's ';' left out."""
    i = source.index(";")
    return source[:i] + source[i + 1:]


@pytest.mark.parametrize("name", NAMES)
def test_spec_through_replay_with_one_repair(name: str) -> None:
    """Every spec through the real client: a first answer missing a ';', then the fix (2 rounds)."""
    pytest.importorskip("openai")
    from tests.llm_replay_server import ReplayServer
    from transpile.llm.client import LLMConfig
    from transpile.llm.fromtext import compile_from_text

    good = (SPECS / f"{name}.ir").read_text()
    script = {"generator": [f"```ir\n{_break(good)}```", f"```ir\n{good}```"]}  # reference: the library
    with ReplayServer(script) as srv:
        cfg = LLMConfig(base_url=srv.base_url, model="replay", backoff=0.0, timeout=10.0)
        res = compile_from_text(SPECS / f"{name}.txt", cfg, emit="ir")
        fix_request = srv.of("generator")[1]["messages"][-1]["content"]
    assert res.rounds == {"generator": 2, "reference": 1}
    assert res.crosscheck.startswith("agreed")
    assert res.module == text.parse(good)
    assert f"{name}.answer.ir:" in fix_request and "error:" in fix_request

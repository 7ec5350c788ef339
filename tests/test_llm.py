"""The LLM path against a real HTTP server (tests/llm_replay_server.py) through the real ``openai`` client.

Covers: valid IR first try, a syntax error then a fix (the located error
reaches the model), a type error then a fix, a disagreement with the
reference (and a signature mismatch) settled by arbitration, 429/5xx then
success, a timeout, hostile answers, an empty answer, caps, the transcript,
and the CLI (no endpoint: the hint; the replay server: verified CUDA).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openai")

from tests.llm_replay_server import ReplayServer  # noqa: E402
from transpile.ir import text  # noqa: E402
from transpile.llm.client import NO_ENDPOINT, LLMClient, LLMConfig, LLMError  # noqa: E402
from transpile.llm.fromtext import compile_from_text  # noqa: E402
from transpile.llm.generate import extract_ir  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "examples" / "specs"
SAXPY = (SPECS / "saxpy.ir").read_text()
GOOD = f"Here you go.\n```ir\n{SAXPY}```\n"
# Subtracts Y: parses and checks, but is not what the spec says.
WRONG = GOOD.replace("a * X[i] + Y[i]", "a * X[i] - Y[i]")
MISSING_SEMI = GOOD.replace("+ Y[i];", "+ Y[i]")
TYPE_ERROR = GOOD.replace("a * X[i] + Y[i]", "a * Z[i] + Y[i]")


def cfg(srv: ReplayServer, **kw: object) -> LLMConfig:
    """A config for the replay server: instant backoff, short timeout."""
    base = {"base_url": srv.base_url, "model": "replay", "api_key": "dummy", "backoff": 0.0, "timeout": 5.0}
    return LLMConfig(**{**base, **kw})  # type: ignore[arg-type]


def run_ir(srv: ReplayServer, spec: Path = SPECS / "saxpy.txt", **kw: object):  # type: ignore[no-untyped-def]
    """--from-text up to the agreed IR (no pipeline, no verifier: those are tested once, below)."""
    return compile_from_text(spec, cfg(srv, **kw), emit="ir")


def last_user(body: dict) -> str:  # type: ignore[type-arg]
    return str([m for m in body["messages"] if m["role"] == "user"][-1]["content"])


def test_valid_first_try() -> None:
    with ReplayServer({"generator": [GOOD], "reference": [GOOD]}) as srv:
        res = run_ir(srv)
    assert res.rounds == {"generator": 1, "reference": 1}
    assert res.crosscheck.startswith("agreed on")
    assert res.module == text.parse(SAXPY)
    assert res.output == text.show(res.module)


def test_prompt_carries_grammar_examples_and_spec() -> None:
    with ReplayServer({"generator": [GOOD], "reference": [GOOD]}) as srv:
        run_ir(srv)
        gen, ref = srv.of("generator")[0], srv.of("reference")[0]
    system = gen["messages"][0]["content"]
    assert "TYPE.2:" in system and "kernel matvec(" in system  # the grammar, a worked example
    assert (SPECS / "saxpy.txt").read_text().strip() in last_user(gen)
    # The reference writer is not told how its program is used.
    for word in ("test", "compare", "cross", "verif", "generator"):
        assert word not in json.dumps(ref["messages"]).lower(), word


def test_syntax_error_then_fix() -> None:
    with ReplayServer({"generator": [MISSING_SEMI, GOOD], "reference": [GOOD]}) as srv:
        res = run_ir(srv)
        second = srv.of("generator")[1]
    assert res.rounds["generator"] == 2
    msg = last_user(second)
    assert "saxpy.answer.ir:3:" in msg and "missing ';'" in msg  # line:col reached the model
    assert second["messages"][2]["content"] == MISSING_SEMI  # its own answer is in the history


def test_expected_tokens_reach_the_model() -> None:
    bad = GOOD.replace("for i in 0..n {", "for i in 0..n Y[i] = 0.0f;")
    with ReplayServer({"generator": [bad, GOOD], "reference": [GOOD]}) as srv:
        run_ir(srv)
        msg = last_user(srv.of("generator")[1])
    assert "saxpy.answer.ir:2:" in msg and "expected" in msg and "'{'" in msg


def test_type_error_then_fix() -> None:
    with ReplayServer({"generator": [TYPE_ERROR, GOOD], "reference": [GOOD]}) as srv:
        res = run_ir(srv)
        msg = last_user(srv.of("generator")[1])
    assert res.rounds["generator"] == 2
    assert "saxpy.answer.ir:3:" in msg and "'Z'" in msg


def test_an_uninitialised_read_is_sent_back_to_the_model() -> None:
    # An answer that reads a local before assigning it would compare as garbage with the cross-check's
    # reference: refused like C (passes/uninit.py), and the located reason goes back to the model.
    uninit = GOOD.replace("  for i in 0..n {", "  f32 s;\n  for i in 0..n {").replace("a * X[i] + Y[i]",
                                                                                     "s * X[i] + Y[i]")
    assert uninit != GOOD
    with ReplayServer({"generator": [uninit, GOOD], "reference": [GOOD]}) as srv:
        res = run_ir(srv)
        msg = last_user(srv.of("generator")[1])
    assert res.rounds["generator"] == 2
    assert "saxpy.answer.ir:4:" in msg and "'s' is read before it is assigned" in msg


def test_disagreement_goes_to_arbitration_reference_wins() -> None:
    arbiter = "Program B adds the old Y, as the description says.\nCHOICE: B"
    with ReplayServer({"generator": [WRONG], "reference": [GOOD], "arbiter": [arbiter]}) as srv:
        res = run_ir(srv)
        refs, arb = srv.of("reference"), srv.of("arbiter")
    assert "arbiter chose the reference" in res.crosscheck
    assert res.module == text.parse(SAXPY)
    assert res.rounds == {"generator": 1, "reference": 1, "arbiter": 1}
    # The reference conversation never saw the generator's answer.
    assert all("- Y[i]" not in json.dumps(b["messages"]) for b in refs)
    shown = last_user(arb[0])
    assert "a * X[i] - Y[i];" in shown and "a * X[i] + Y[i];" in shown and "On this input" in shown


def test_disagreement_generator_wins() -> None:
    with ReplayServer({"generator": [GOOD], "reference": [WRONG], "arbiter": ["fine\nCHOICE: A"]}) as srv:
        res = run_ir(srv)
    assert "generated" in res.crosscheck and res.module == text.parse(SAXPY)


def test_signature_mismatch_is_a_disagreement() -> None:
    f64 = GOOD.replace("f32", "f64")
    with ReplayServer({"generator": [GOOD], "reference": [f64], "arbiter": ["CHOICE: A"]}) as srv:
        res = run_ir(srv)
        shown = last_user(srv.of("arbiter")[0])
    assert "signatures differ" in shown and "f32" in shown and "f64" in shown
    assert "generated" in res.crosscheck


def test_arbiter_without_choice_is_bounded() -> None:
    with ReplayServer({"generator": [WRONG], "reference": [GOOD], "arbiter": ["I cannot decide."]}) as srv:
        with pytest.raises(LLMError, match="arbiter named no program in 2 rounds"):
            run_ir(srv, rounds=2)
        assert len(srv.of("arbiter")) == 2


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retry_then_success(status: int) -> None:
    with ReplayServer({"generator": [{"status": status}, {"status": status}, GOOD], "reference": [GOOD]}) as srv:
        res = run_ir(srv)
        assert len(srv.of("generator")) == 3
    assert res.rounds["generator"] == 1  # retries are not rounds


def test_retries_are_bounded() -> None:
    with ReplayServer({"generator": [{"status": 429}]}) as srv:
        with pytest.raises(LLMError, match=r"failed after 3 attempts: RateLimitError \(HTTP 429\)"):
            run_ir(srv, retries=2)
        assert len(srv.of("generator")) == 3


def test_backoff_is_exponential() -> None:
    waits: list[float] = []
    with ReplayServer({"generator": [{"status": 429}]}) as srv:
        client = LLMClient(cfg(srv, retries=3, backoff=0.5), sleep=waits.append)
        with pytest.raises(LLMError):
            client.chat([{"role": "user", "content": "x"}], conversation="generator")
    assert waits == [0.5, 1.0, 2.0]


def test_client_error_is_not_retried() -> None:
    with ReplayServer({"generator": [{"status": 400}]}) as srv:
        with pytest.raises(LLMError, match="refused the request"):
            run_ir(srv)
        assert len(srv.of("generator")) == 1


def test_timeout_then_retry() -> None:
    with ReplayServer({"generator": [{"sleep": 2.0, "answer": GOOD}, GOOD], "reference": [GOOD]}) as srv:
        res = run_ir(srv, timeout=0.3)
        assert len(srv.of("generator")) == 2
    assert res.rounds["generator"] == 1


def test_timeout_without_retries_is_a_clean_error() -> None:
    with ReplayServer({"generator": [{"sleep": 2.0, "answer": GOOD}]}) as srv:
        with pytest.raises(LLMError, match="APITimeoutError"):
            run_ir(srv, timeout=0.3, retries=0)


def test_empty_answer_is_bounded() -> None:
    with ReplayServer({"generator": [""]}) as srv:
        with pytest.raises(LLMError, match="no valid IR for the generator in 3 rounds"):
            run_ir(srv, rounds=3)
        assert len(srv.of("generator")) == 3
        assert "the answer was empty" in last_user(srv.of("generator")[-1])


def test_token_budget() -> None:
    with ReplayServer({"generator": [MISSING_SEMI]}) as srv:
        with pytest.raises(LLMError, match="token budget"):
            run_ir(srv, token_budget=10)
        assert len(srv.of("generator")) == 1


def test_transcript(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    with ReplayServer({"generator": [{"status": 429}, MISSING_SEMI, GOOD], "reference": [GOOD]}) as srv:
        run_ir(srv, log=log)
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["conversation"] for r in recs] == ["generator"] * 3 + ["reference"]
    assert recs[0]["error"].startswith("RateLimitError") and recs[1]["answer"] == MISSING_SEMI


def test_extract_ir() -> None:
    assert extract_ir("x\n```ir\nkernel k() {\n}\n```\ny") == "kernel k() {\n}\n"
    assert extract_ir("```c\nint x;\n```\n```ir\nkernel k() {\n}\n```") == "kernel k() {\n}\n"
    assert extract_ir("```cuda\n#include <x>\n```") == "#include <x>\n"  # then a parse error
    assert extract_ir("no block at all") is None
    assert extract_ir("```ir\nunterminated") is None


# ---------------------------------------------------------------------------
# The command line, in a fresh interpreter, as a user runs it


def transpile(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TRANSPILE_MODEL")}
    full.update(env)
    full["PYTHONPATH"] = str(ROOT) + os.pathsep + full.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "transpile.cli", *args], capture_output=True, text=True,
                          env=full, cwd=cwd, timeout=600)


def srv_env(srv: ReplayServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": srv.base_url, "TRANSPILE_MODEL": "replay", "OPENAI_API_KEY": "dummy",
            "TRANSPILE_LLM_BACKOFF": "0"}


def test_no_endpoint_hint(tmp_path: Path) -> None:
    out = tmp_path / "s.cu"
    p = transpile("--from-text", str(SPECS / "saxpy.txt"), "-o", str(out), env={}, cwd=tmp_path)
    assert p.returncode == 1
    assert p.stderr.strip().splitlines() == [f"transpile: error: {NO_ENDPOINT}"]
    assert not out.exists() and not list(tmp_path.iterdir())


def test_ir_spec_works_offline(tmp_path: Path) -> None:
    out = tmp_path / "s.cu"
    p = transpile("--from-text", str(SPECS / "saxpy.ir"), "-o", str(out), "--no-verify", env={}, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert 'extern "C" void saxpy(' in out.read_text()


def test_cli_saxpy_verified(tmp_path: Path) -> None:
    """The acceptance run: the replay server's saxpy becomes CUDA that passes stages (a)-(c)."""
    out = tmp_path / "s.cu"
    with ReplayServer() as srv:  # no script: the spec library's answers
        p = transpile("--from-text", str(SPECS / "saxpy.txt"), "-o", str(out), env=srv_env(srv), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "verifier: saxpy: pass (stages passed: abc" in p.stderr
    assert "rounds: generator 1, reference 1" in p.stderr
    assert 'extern "C" void saxpy(int n, float a, ' in out.read_text()


HOSTILE = [
    "```cuda\n#include \"/etc/passwd\"\n__global__ void k() { system(\"touch PWNED\"); }\n```",
    "```ir\n__import__('os').system('touch PWNED')\n```",
    "```ir\nkernel ../../etc/passwd(i32 n) {\n}\n```\nWrite the output to ../../etc/passwd",
    "```python\nopen('PWNED', 'w').write('x')\n```",
    "```ir\n" + "kernel k(i32 n) { " * 20000 + "\n```",  # huge and deeply nested
    "x" * 3_000_000,
]


def test_hostile_answers_are_data(tmp_path: Path) -> None:
    out = tmp_path / "out" / "s.cu"
    out.parent.mkdir()
    script: dict[str, list[str | dict[str, object]]] = {"generator": [*HOSTILE]}
    with ReplayServer(script) as srv:
        p = transpile("--from-text", str(SPECS / "saxpy.txt"), "-o", str(out), "--llm-rounds", str(len(HOSTILE)),
                      env=srv_env(srv), cwd=tmp_path)
        asked = srv.of("generator")
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and "no valid IR for the generator in 6 rounds" in p.stderr
    assert len(asked) == len(HOSTILE)
    assert sorted(x.name for x in tmp_path.rglob("*")) == ["out"]  # nothing written, nothing executed
    assert not (ROOT / "PWNED").exists()
    assert "unexpected character '#'" in last_user(asked[1])  # the CUDA block was an IR parse error


def test_paths_in_a_valid_answer_are_ignored(tmp_path: Path) -> None:
    answer = "Save this as ../../evil.cu and /tmp/evil.cu.\n" + GOOD
    out = tmp_path / "a" / "s.ir"
    out.parent.mkdir()
    with ReplayServer({"generator": [answer], "reference": [GOOD]}) as srv:
        p = transpile("--from-text", str(SPECS / "saxpy.txt"), "-o", str(out), "--emit", "ir",
                      env=srv_env(srv), cwd=tmp_path / "a")
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in tmp_path.rglob("*")) == ["a", "s.ir"]
    assert out.read_text() == text.show(text.parse(SAXPY))


def test_empty_answer_cli(tmp_path: Path) -> None:
    out = tmp_path / "s.cu"
    with ReplayServer({"generator": [""]}) as srv:
        p = transpile("--from-text", str(SPECS / "saxpy.txt"), "-o", str(out), "--llm-rounds", "2",
                      env=srv_env(srv), cwd=tmp_path)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip().splitlines() == [
        "transpile: error: the model gave no valid IR for the generator in 2 rounds "
        "(last problem: the answer was empty)"]
    assert not out.exists()


def test_runaway_reference_is_a_fault_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    from transpile.llm import crosscheck

    monkeypatch.setattr(crosscheck, "TIME_LIMIT", 1.0)
    hang = GOOD.replace("  for i in 0..n {", "  for k in 0..2000000000 {\n  for i in 0..n {").replace(
        "  }\n}", "  }\n  }\n}")
    with ReplayServer({"generator": [GOOD], "reference": [hang], "arbiter": ["CHOICE: A"]}) as srv:
        res = run_ir(srv)
        shown = last_user(srv.of("arbiter")[0])
    assert "did not finish within 1 s" in shown
    assert res.module == text.parse(SAXPY)


def test_cli_arbitration_then_verified(tmp_path: Path) -> None:
    """A wrong first answer, the reference disagrees, the arbiter picks it: the CUDA verifies."""
    out = tmp_path / "s.cu"
    script = {"generator": [WRONG], "reference": [GOOD], "arbiter": ["B adds Y.\nCHOICE: B"]}
    with ReplayServer(script) as srv:
        p = transpile("--from-text", str(SPECS / "saxpy.txt"), "-o", str(out), env=srv_env(srv), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "arbiter chose the reference program" in p.stderr and "pass (stages passed: abc" in p.stderr
    assert "a * X[i] + Y[i]" in out.read_text()


def test_model_may_not_mark_parallel_loops() -> None:
    from transpile.diagnostics import TranspileError
    from transpile.llm.generate import check_ir

    par = "kernel k(i32 n, out f32 y[n]) {\n  launch {\n    for i in 0..n par(x) {\n      y[i] = 1.0f;\n    }\n  }\n}\n"
    with pytest.raises(TranspileError, match=r"^a\.ir:2:3: error: write plain sequential loops"):
        check_ir(par, "a.ir")

"""``transpile evaluate TASKS.jsonl --turns K --group G``: a model writes the CUDA, turn by turn, pruned.

Each line of the task list is ``{"id", "reference" (a .c or .ir path)
[, "function"] [, "spec" (a text task, verified against the reference)]}``;
relative paths are relative to the list.  A model behind an OpenAI-compatible
endpoint (the ``--llm-*`` options, :mod:`transpile.llm.client`) plays every
episode of a :class:`~transpile.search.prune.GroupRollout`: one conversation per
episode, the environment's observation as the user message, the answer's
fenced ``cuda`` block (else the whole answer) as the submission, the
verifier's feedback as the next message.  Sample ``s`` of a group asks with
the sampling seed ``seed + s`` at ``--temperature``, so the G samples differ
and a seeded run can be replayed.  The answer is data: it is only written
under the verifier's cache and compiled and run inside the isolated
verification (:mod:`transpile.search.evaluate`).

Output, JSON lines, streamed: a ``"kind": "turn"`` line per verification
(in rounds; within a round, by task and sample), a ``"kind": "task"`` line
per task once the run ends (difficulty, turns, compilations spent and
saved), then one ``"kind": "summary"`` line (the budget).  docs/rewards.md.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

import click

from transpile.diagnostics import Loc, TranspileError
from transpile.search.evaluate import json_line
from transpile.search.prune import GroupRollout, Key

SYSTEM = ("You write CUDA source files. Each file defines an extern \"C\" host function that is a drop-in "
          "replacement for a reference function (same name and C signature; it copies the arrays to the "
          "device, launches kernels and copies the results back). Answer with the whole file in one fenced "
          "```cuda block; text outside the block is ignored.")


def read_tasks(path: Path) -> list[dict[str, Any]]:
    """The tasks of a JSONL list; the first bad line is a ``file:line:col: error:`` diagnostic."""
    try:
        text = path.read_text(errors="surrogateescape")
    except OSError as e:
        raise TranspileError(None, f"cannot read '{path}': {e}") from None
    tasks: list[dict[str, Any]] = []
    seen: set[str] = set()
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        where = Loc(str(path), n)
        item, sid = json_line(path, text, n, raw, seen, shape="{\"id\", \"reference\" [, \"function\", \"spec\"]}",
                              what="task")
        if "cuda" in item or "cuda_path" in item:
            raise TranspileError(where, f"task {sid}: with --turns/--group the model writes the CUDA: a line is "
                                        "a task {\"id\", \"reference\" [, \"function\", \"spec\"]}")
        for key in ("reference", "function", "spec"):
            if key in item and not isinstance(item[key], str):
                raise TranspileError(where, f"task {sid}: \"{key}\" must be a string")
        if "reference" not in item:
            raise TranspileError(where, f"task {sid}: missing \"reference\" (a .c or .ir path)")
        ref = path.parent / item["reference"]
        if not ref.is_file():
            raise TranspileError(where, f"task {sid}: reference '{item['reference']}': no such file")
        tasks.append({"id": str(sid), "reference": ref, "function": item.get("function"), "spec": item.get("spec")})
    if not tasks:
        raise TranspileError(None, f"{path}: no task")
    return tasks


class LLMPolicy:
    """One conversation per episode with the model; ``__call__(actions' observations) -> answers``."""

    def __init__(self, client: Any, *, seed: int, jobs: int = 1) -> None:
        self.client = client
        self.seed = seed
        self.jobs = jobs
        self.conversations: dict[Key, list[dict[str, str]]] = {}

    def answer(self, key: Key, observation: str) -> str:
        """The submission of episode ``key`` for ``observation``: the answer's CUDA block, else the answer."""
        from transpile.llm.repair import extract_cuda

        msgs = self.conversations.setdefault(key, [{"role": "system", "content": SYSTEM}])
        msgs.append({"role": "user", "content": observation})
        text = self.client.chat(msgs, conversation="generator", seed=self.seed + key[1])
        msgs.append({"role": "assistant", "content": text})
        return extract_cuda(text) or text

    def __call__(self, observations: Mapping[Key, str]) -> dict[Key, str]:
        # NOTE: the threads end (the pool is shut down) before the round's verifications fork children.
        if self.jobs <= 1:
            return {k: self.answer(k, o) for k, o in sorted(observations.items())}
        with ThreadPoolExecutor(self.jobs) as pool:
            futures = {k: pool.submit(self.answer, k, o) for k, o in sorted(observations.items())}
            return {k: f.result() for k, f in futures.items()}


def play(roll: GroupRollout, policy: Callable[[Mapping[Key, str]], Mapping[Key, str]],
         out: TextIO | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run ``roll`` to its end with ``policy``; the turn lines, then the task lines and the summary, are
    written to ``out`` as JSON lines (each round's lines as the round ends).  Returns the summary."""
    obs = roll.reset()
    while obs:
        obs, results = roll.step(dict(policy(obs)))
        for key in sorted(results):
            rec = results[key]
            if out is not None:
                out.write(json.dumps(rec) + "\n")
            if progress is not None:
                progress(f"{rec['id']}: {rec['verdict']} ({rec['seconds']:.1f} s) {rec['reason']}")
        if out is not None:
            out.flush()
    summary = roll.summary()
    if out is not None:
        for rec in roll.task_records():
            out.write(json.dumps(rec) + "\n")
        out.write(json.dumps(summary) + "\n")
        out.flush()
    return summary


def evaluate_groups(path: Path, output: str, *, turns: int, group: int, prune: bool, pass_at: float,
                    fail_at: float, budget: int | None, max_turns: int | None, temperature: float | None,
                    jobs: int, backend: str, address: str | None, timeout: float, stages: str, mode: str,
                    seed: int | None, no_gpu: bool, quiet: bool, llm: dict[str, Any]) -> None:
    """The ``evaluate --turns/--group`` command: errors are :class:`TranspileError` (exit 1)."""
    from transpile.llm.client import LLMClient
    from transpile.llm.options import config
    from transpile.search.env import KernelEnv
    from transpile.search.prune import Pruning
    from transpile.verify.stages import new_seed

    if max_turns is not None and max_turns < turns:
        raise TranspileError(None, f"--max-turns {max_turns} is less than --turns {turns}")
    if llm.get("llm_rounds") is not None:
        raise TranspileError(None, "--llm-rounds does not apply here: an episode's turns are --turns and --max-turns")
    if not prune and (pass_at != 1.0 or fail_at != 1.0):
        raise TranspileError(None, "--prune-pass and --prune-fail need pruning on (leave out --no-prune)")
    cfg = config(llm)
    cfg.require_endpoint()
    cfg.temperature = temperature if temperature is not None else (1.0 if group > 1 else 0.0)
    items = read_tasks(path)
    gpu = None if not no_gpu and any(k in stages for k in "def") else False
    envs = [KernelEnv(t["spec"] if t["spec"] is not None else t["reference"], reference=t["reference"],
                      function=t["function"], max_turns=turns, stages=stages, mode=mode, gpu=gpu, timeout=timeout)
            for t in items]
    total = len(envs) * group
    if budget is not None and budget < total:
        raise TranspileError(None, f"--budget {budget} does not pay the first turn of every sample "
                                   f"({len(envs)} tasks x --group {group} = {total} verifications)")
    run_seed = seed if seed is not None else new_seed()
    roll = GroupRollout(envs, group=group, turns=turns, pruning=Pruning(pass_at, fail_at, enabled=prune),
                        budget=budget, max_turns=max_turns, jobs=jobs, backend=backend, address=address,
                        seed=run_seed, ids=[t["id"] for t in items])
    policy = LLMPolicy(LLMClient(cfg), seed=run_seed, jobs=jobs)
    out = sys.stdout if output == "-" else open(output, "w")
    try:
        s = play(roll, policy, out, None if quiet else lambda m: click.echo(m, err=True))
    finally:
        if out is not sys.stdout:
            out.close()
    if not quiet:
        by = s["by_difficulty"]
        click.echo(f"{s['spent']} of {s['budget']} verifications; " + ", ".join(
            f"{d} {by[d]['tasks']} tasks {by[d]['verifications']}" for d in by) +
            f"; pruned {len(s['pruned'])}, saved {s['saved']['verifications']} verifications "
            f"({s['saved']['compilations']} compilations), reassigned {s['reassigned']}", err=True)

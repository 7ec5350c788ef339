"""``transpile evaluate SUBMISSIONS.jsonl``: score candidate CUDA files with the verifier, isolated and in
parallel (:mod:`transpile.search.evaluate`), or run multi-turn groups with difficulty-conditioned pruning
(``--turns K --group G``: :mod:`transpile.search.rollout`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from transpile.diagnostics import TranspileError
from transpile.llm.options import llm_options
from transpile.search.evaluate import (
    Task,
    import_ray,
    read_submissions,
    run_tasks,
    unfinished,
)


@click.command("evaluate")
@click.argument("submissions", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", default="-", show_default=True, help="Scores, one JSON line per submission.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Submissions verified at once (local processes, or the CPUs of a local Ray instance).")
@click.option("--backend", type=click.Choice(["local", "ray"]), default="local", show_default=True)
@click.option("--address", default=None, metavar="ADDR", help="The Ray cluster to join (ray.init(address=...)).")
@click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="Seconds per submission; a submission still running is killed and reported.")
@click.option("--stages", default="abcdef", show_default=True, metavar="KEYS",
              help="Verifier stages to attempt (a is always run); d-f need a GPU.")
@click.option("--mode", type=click.Choice(["quick", "full"]), default="full", show_default=True,
              help="Shapes of stage (c): the compile-time check's few small ones, or the full set.")
@click.option("--seed", type=int, default=None, help="One seed for every submission (default: a fresh one each).")
@click.option("--no-gpu", is_flag=True, help="Leave out the GPU stages (d)-(f).")
@click.option("--quiet", "-q", is_flag=True, help="No progress line per submission on stderr.")
@click.option("--turns", type=click.IntRange(min=1), default=None, metavar="K",
              help="Multi-turn: a model (--llm-*) writes the CUDA for each task of the list, K turns per "
                   "episode; the budget is tasks x G x K verifications.")
@click.option("--group", type=click.IntRange(min=1), default=None, metavar="G",
              help="Multi-turn: G episodes (samples) per task, ranked within the group each turn [default: 1].")
@click.option("--prune/--no-prune", default=True, show_default=True,
              help="After turn 1, stop tasks whose group is too easy or hopeless; their turns go to the others.")
@click.option("--prune-pass", type=click.FloatRange(0, 1, min_open=True), default=1.0, show_default=True,
              metavar="FRAC", help="Too easy: at least this fraction of the group passed turn 1.")
@click.option("--prune-fail", type=click.FloatRange(0, 1, min_open=True), default=1.0, show_default=True,
              metavar="FRAC", help="Hopeless: at least this fraction failed turn 1 at stage (a) or (b).")
@click.option("--budget", type=click.IntRange(min=1), default=None, metavar="N",
              help="Verifications the whole run may spend, shared by the tasks [default: tasks x G x K].")
@click.option("--max-turns", type=click.IntRange(min=1), default=None, metavar="M",
              help="Turns an episode may take with the budget pruning freed [default: 2K, K with --no-prune].")
@click.option("--temperature", type=click.FloatRange(min=0), default=None,
              help="The model's sampling temperature [default: 1.0 with G > 1, else 0].")
@llm_options
def evaluate_cmd(submissions: Path, output: str, jobs: int, backend: str, address: str | None, timeout: float,
                 stages: str, mode: str, seed: int | None, no_gpu: bool, quiet: bool, turns: int | None = None,
                 group: int | None = None, prune: bool = True, prune_pass: float = 1.0, prune_fail: float = 1.0,
                 budget: int | None = None, max_turns: int | None = None, temperature: float | None = None,
                 **llm: Any) -> None:
    """Score the candidate CUDA files of SUBMISSIONS.jsonl with the verifier, isolated and in parallel.

    Each line: {"id", "cuda" (text) or "cuda_path", "reference" (.c/.ir) [, "function"]}.
    Output: a line per submission in completion order (verdict, failing stage and check, rewards,
    feedback text, seconds); a submission that hangs or crashes the verifier is reported as such.

    With --turns K or --group G the list holds tasks ({"id", "reference" [, "function", "spec"]}),
    a model writes the CUDA, and tasks are pruned by difficulty after turn 1 (docs/rewards.md).
    """
    from transpile.guard import guard as _guard

    if turns is not None or group is not None:
        from transpile.search.rollout import evaluate_groups

        _guard(lambda: evaluate_groups(
            submissions, output, turns=turns or 1, group=group or 1, prune=prune, pass_at=prune_pass,
            fail_at=prune_fail, budget=budget, max_turns=max_turns, temperature=temperature, jobs=jobs,
            backend=backend, address=address, timeout=timeout, stages=stages, mode=mode, seed=seed,
            no_gpu=no_gpu, quiet=quiet, llm=llm))
        return
    ctx = click.get_current_context(silent=True)
    multi = {"prune", "prune_pass", "prune_fail", "budget", "max_turns", "temperature", *llm}
    extra = [p.opts[0] for p in (ctx.command.params if ctx is not None else ()) if p.name in multi and
             ctx.get_parameter_source(p.name) not in (None, click.core.ParameterSource.DEFAULT)]  # type: ignore[union-attr]
    if extra:
        _guard(lambda: _refuse(f"{', '.join(extra)}: only with --turns or --group (a model writes the CUDA)"))
    _guard(lambda: _evaluate(submissions, output, jobs, backend, address, timeout, stages, mode, seed,
                             no_gpu, quiet))


def _refuse(msg: str) -> None:
    raise TranspileError(None, msg)


def _evaluate(path: Path, output: str, jobs: int, backend: str, address: str | None, timeout: float,
              stages: str, mode: str, seed: int | None, no_gpu: bool, quiet: bool) -> None:
    subs, errors = read_submissions(path)
    if not subs and errors:
        raise errors[0][1]  # nothing to score: the first bad line is the error
    gpu = not no_gpu and any(k in stages for k in "def")
    if backend == "ray":
        import_ray()  # the clear error before any work
    common = {"stages": stages, "mode": mode, "seed": seed, "gpu": None if gpu else False, "sim_timeout": min(120.0, timeout / 3)}
    tasks = [Task(s["id"], "transpile.search.evaluate:score_submission", {**s, **common}) for s in subs]
    out = sys.stdout if output == "-" else open(output, "w")  # streamed line by line, closed below
    try:
        for rec, err in errors:  # the bad lines' records first; the rest are scored
            out.write(json.dumps(rec) + "\n")
            out.flush()
            click.echo(err.headline, err=True)
        for n, o in enumerate(run_tasks(tasks, jobs=jobs, timeout=timeout, backend=backend, address=address,
                                        gpu=gpu), 1):
            line = {**o.value, "seconds": round(o.seconds, 3)} if o.ok else \
                {**unfinished(o.key, o, timeout), "seconds": round(o.seconds, 3)}
            out.write(json.dumps(line) + "\n")
            out.flush()
            if not quiet:
                click.echo(f"[{n}/{len(tasks)}] {o.key}: {line['verdict']} ({o.seconds:.1f} s) {line['reason']}",
                           err=True)
    finally:
        if out is not sys.stdout:
            out.close()

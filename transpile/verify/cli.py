"""``transpile verify KERNEL.cu --against REF.c``: the verifier on the command line.

Exit status 0 when every stage that can run here passed and at least one of
them compared results; 1 on a verification failure, an inconclusive test or
an unverified kernel (the one-line reason comes first on stderr); never a
traceback.  ``--json`` prints the machine-readable record on stdout.

``transpile verify --group A.cu B.cu C.cu --against REF.c`` verifies every
candidate (isolated, ``--jobs`` at a time, one seed for all) and ranks them
in a tournament (:func:`transpile.search.rewards.tournament`): a table of rank,
reward and verdict, or with ``--json`` a list of records in the order given.
Exit status 0 once the ranking is printed, whatever the verdicts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from transpile.diagnostics import TranspileError

if TYPE_CHECKING:
    from transpile.verify.report import Report

T = TypeVar("T")


def parse_sizes(items: tuple[str, ...]) -> dict[str, int]:
    """``--size n=1000 --size m=800`` or ``--size n=1000,m=800``; a bare number is every size parameter (``*``)."""
    sizes: dict[str, int] = {}
    for item in items:
        for part in filter(None, (p.strip() for p in item.split(","))):
            name, eq, value = part.partition("=")
            if not eq:
                name, value = "*", name
            try:
                v = int(value)
            except ValueError:
                raise TranspileError(None, f"--size {part}: expected NAME=INTEGER") from None
            if v < 0:
                raise TranspileError(None, f"--size {part}: sizes must be non-negative")
            sizes[name.strip()] = v
    return sizes


@click.command("verify")
@click.argument("kernels", nargs=-1, metavar="KERNEL...", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--against", "reference", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The reference: a C file (compiled by gcc) or the IR text form (interpreted).")
@click.option("--function", metavar="NAME", default=None, help="The reference function (default: the only one).")
@click.option("--size", "sizes", multiple=True, metavar="N=V",
              help="Full size for the GPU stages, e.g. --size n=4096 (repeatable, or n=1,m=2).")
@click.option("--seed", type=int, default=None, help="Replay a run: the seed a report printed.")
@click.option("--json", "as_json", is_flag=True, help="Print the machine-readable record on stdout.")
@click.option("--stages", default="abcdef", show_default=True, metavar="KEYS",
              help="Stages to attempt (a is always run).")
@click.option("--no-gpu", is_flag=True, help="Skip the GPU stages (d)-(f) even when a GPU is present.")
@click.option("--seeds", "full_seeds", type=int, default=3, show_default=True,
              help="Input draws at full size in stage (e).")
@click.option("--quick", is_flag=True,
              help="The check 'transpile compile' runs (fewer shapes, one full-size seed, no sanitizer): "
                   "a compile's replay line names it.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines; only the reason (and --json).")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Include path for a C reference.")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Macro for a C reference.")
@click.option("--profile/--no-profile", "profile", default=None,
              help="After stage (c) passed, the structural profile (coalescing, bank conflicts, divergence, "
                   "barriers, atomics, intensity, occupancy) under the record's 'profile' key (docs/verify.md); "
                   "with --group it breaks ties where no time was measured.  Default: on with --json (it costs "
                   "about 0.01-0.09x stage (c)), off otherwise.")
@click.option("--group", is_flag=True,
              help="Several candidates: verify each and print its tournament rank and reward (docs/rewards.md).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="With --group: candidates verified at once, each in its own process.")
@click.option("--timeout", type=click.FloatRange(min=1), default=600.0, show_default=True,
              help="With --group: seconds per candidate before it is killed and ranked last.")
def verify_cmd(kernels: tuple[Path, ...], reference: Path, function: str | None, sizes: tuple[str, ...],
               seed: int | None, as_json: bool, stages: str, no_gpu: bool, full_seeds: int, quiet: bool,
               include_dirs: tuple[str, ...], defines: tuple[str, ...], group: bool = False, jobs: int = 1,
               timeout: float = 600.0, profile: bool | None = None, quick: bool = False) -> None:
    """Verify KERNEL.cu, any CUDA file defining the drop-in extern "C" host function,
    against the reference: stages (a) front end, (b) nvcc, (c) CPU simulation,
    (d)-(f) GPU runs and timing when a GPU is present.  With --group, rank several."""
    if profile is None:  # a JSON record carries the profile unless --no-profile
        profile = as_json
    from transpile.verify.report import Progress
    from transpile.verify.stages import Options, verify_file

    if group and quick:
        raise click.UsageError("--quick replays one compile's check: one KERNEL, without --group")
    if group:
        _verify_group(kernels, reference, function=function, sizes=sizes, seed=seed, as_json=as_json,
                      stages=stages, no_gpu=no_gpu, full_seeds=full_seeds, quiet=quiet,
                      include_dirs=include_dirs, defines=defines, jobs=jobs, timeout=timeout, profile=profile)
        return
    if len(kernels) != 1:
        raise click.UsageError("expected one KERNEL (several need --group)" if kernels
                               else "Missing argument 'KERNEL'.")
    kernel = kernels[0]
    progress = Progress(enabled=not quiet and sys.stderr.isatty())

    def run() -> Report:
        if not kernel.is_file():
            raise TranspileError(None, f"{kernel}: no such file")
        if not reference.is_file():
            raise TranspileError(None, f"{reference}: no such file")
        size_map = parse_sizes(sizes)
        opts = Options(seed=seed, mode="quick" if quick else "full", sizes=size_map,
                       stages="a" + stages.replace("a", ""), gpu=False if no_gpu else None,
                       full_seeds=1 if quick else max(1, full_seeds), progress=progress, profile=profile,
                       sanitizer=False if quick else Options.sanitizer)
        return verify_file(kernel, reference, function=function, include_dirs=include_dirs, defines=defines,
                           options=opts)

    report = _guarded(run)
    if not report.ok:
        click.echo(f"transpile: error: verification {report.verdict}: {report.reason}", err=True)
    if not quiet:
        (progress if progress.enabled else Progress(enabled=True)).summary(report)
    if as_json:
        click.echo(report.dumps())
    sys.exit(0 if report.ok else 1)


def _verify_group(kernels: tuple[Path, ...], reference: Path, *, function: str | None, sizes: tuple[str, ...],
                  seed: int | None, as_json: bool, stages: str, no_gpu: bool, full_seeds: int, quiet: bool,
                  include_dirs: tuple[str, ...], defines: tuple[str, ...], jobs: int, timeout: float,
                  profile: bool = False) -> None:
    """``--group``: every candidate verified isolated, with one seed, then ranked (with ``profile``, the
    structural profile breaks ties where no time was measured)."""
    import json

    from transpile.search import rewards
    from transpile.search.evaluate import Task, run_tasks, unfinished
    from transpile.verify.stages import new_seed

    def run() -> list[dict]:
        if not kernels:
            raise TranspileError(None, "--group needs at least one KERNEL.cu")
        for path in (*kernels, reference):
            if not path.is_file():
                raise TranspileError(None, f"{path}: no such file")
        one_seed = seed if seed is not None else new_seed()  # every candidate sees the same inputs
        gpu = not no_gpu and any(k in stages for k in "def")
        common = {"reference": str(reference), "function": function, "stages": stages, "mode": "full",
                  "seed": one_seed, "gpu": None if gpu else False, "sizes": parse_sizes(sizes),
                  "full_seeds": max(1, full_seeds), "sim_timeout": min(120.0, timeout / 3),
                  "include_dirs": include_dirs, "defines": defines, **({"profile": True} if profile else {})}
        tasks = [Task(str(i), "transpile.search.evaluate:score_submission", {**common, "id": str(k), "cuda_path": str(k)})
                 for i, k in enumerate(kernels)]
        lines: list[dict] = [{}] * len(kernels)
        for o in run_tasks(tasks, jobs=jobs, timeout=timeout, gpu=gpu):
            i = int(o.key)
            lines[i] = o.value if o.ok else unfinished(str(kernels[i]), o, timeout)
            if not quiet:
                click.echo(f"{kernels[i]}: {lines[i]['verdict']} ({o.seconds:.1f} s)", err=True)
        return lines

    lines = _guarded(run)
    ranked = rewards.tournament(lines)
    out = [{"candidate": str(k), "rank": rank, "reward": round(reward, 6), **{
        f: line[f] for f in ("verdict", "ok", "reason", "stage", "check", "stages_passed", "seed", "timing",
                             "rewards")}, **({"structural_reward": rewards.structural_reward(line)} if profile else {})}
        for k, line, (rank, reward) in zip(kernels, lines, ranked)]
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    width = max(len(r["candidate"]) for r in out)
    click.echo(f"{'rank':>5}  {'reward':>6}  {'verdict':<12}  {'candidate':<{width}}  reason")
    for r in sorted(out, key=lambda r: r["rank"]):
        click.echo(f"{r['rank']:>5g}  {r['reward']:>6.3f}  {r['verdict']:<12}  {r['candidate']:<{width}}  "
                   f"{r['reason']}")


def _guarded(action: Callable[[], T]) -> T:
    """``action()``; a user error is its ``file:line:col: error:`` line and exit status 1, our own bug
    an internal-error line and status 2 (a traceback only with TRANSPILE_TRACEBACK set)."""
    try:
        return action()
    except TranspileError as e:
        click.echo(e.headline, err=True)
        sys.exit(1)
    except Exception as e:  # our bug: still no traceback
        import os

        click.echo(f"transpile: error: verifier internal error: {type(e).__name__}: {e}", err=True)
        if os.environ.get("TRANSPILE_TRACEBACK"):
            raise
        sys.exit(2)

"""``transpile verify KERNEL.cu --against REF.c``: the verifier on the command line.

Exit status 0 when every stage that can run here passed and at least one of
them compared results; 1 on a verification failure, an inconclusive test or
an unverified kernel (the one-line reason comes first on stderr); never a
traceback.  ``--json`` prints the machine-readable record on stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from transpile.diagnostics import TranspileError


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
@click.argument("kernel", type=click.Path(dir_okay=False, path_type=Path))
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
@click.option("--quiet", "-q", is_flag=True, help="No progress lines; only the reason (and --json).")
@click.option("-I", "include_dirs", multiple=True, metavar="DIR", help="Include path for a C reference.")
@click.option("-D", "defines", multiple=True, metavar="NAME[=VALUE]", help="Macro for a C reference.")
def verify_cmd(kernel: Path, reference: Path, function: str | None, sizes: tuple[str, ...], seed: int | None,
               as_json: bool, stages: str, no_gpu: bool, full_seeds: int, quiet: bool,
               include_dirs: tuple[str, ...], defines: tuple[str, ...]) -> None:
    """Verify KERNEL.cu, any CUDA file defining the drop-in extern "C" host function,
    against the reference: stages (a) front end, (b) nvcc, (c) CPU simulation,
    (d)-(f) GPU runs and timing when a GPU is present."""
    from transpile.verify.report import Progress
    from transpile.verify.stages import Options, verify_file

    try:
        if not kernel.is_file():
            raise TranspileError(None, f"{kernel}: no such file")
        if not reference.is_file():
            raise TranspileError(None, f"{reference}: no such file")
        size_map = parse_sizes(sizes)
        progress = Progress(enabled=not quiet and sys.stderr.isatty())
        opts = Options(seed=seed, mode="full", sizes=size_map, stages="a" + stages.replace("a", ""),
                       gpu=False if no_gpu else None, full_seeds=max(1, full_seeds), progress=progress)
        report = verify_file(kernel, reference, function=function, include_dirs=include_dirs, defines=defines,
                             options=opts)
    except TranspileError as e:
        click.echo(e.headline, err=True)
        sys.exit(1)
    except Exception as e:  # our bug: still no traceback
        import os

        click.echo(f"transpile: error: verifier internal error: {type(e).__name__}: {e}", err=True)
        if os.environ.get("TRANSPILE_TRACEBACK"):
            raise
        sys.exit(2)
    if not report.ok:
        click.echo(f"transpile: error: verification {report.verdict}: {report.reason}", err=True)
    if not quiet:
        (progress if progress.enabled else Progress(enabled=True)).summary(report)
    if as_json:
        click.echo(report.dumps())
    sys.exit(0 if report.ok else 1)

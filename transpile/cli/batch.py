"""Several inputs in one call (``transpile a.c b.c ... -o DIR [-j N]``) and the pass budget's options.

Starting Python and importing the compiler costs about half a second, more than compiling a
small kernel; a build of many files pays it once per call here, not once per file.  Each input
is compiled exactly as ``transpile FILE -o DIR/<stem>.cu`` with the other options of the call
would compile it (the compile command's own function, called once per input), so its
diagnostics, exit status and output are those of a one-input call.  An input that fails is
reported (``file:line:col: error: ...``) and the others are still compiled; the call exits 1 if
any failed.  ``-j N`` compiles in ``N`` worker processes (forked: the imports are already
done); each input's diagnostics are printed together, in input order.

The budget options (``--max-pass-seconds``, ``--max-seconds``, ``--max-memory``) are defined here
too and read by :func:`budget_of` (see :mod:`passes.budget`).
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from passes.budget import DEFAULT_MEMORY_MB, DEFAULT_PASS_SECONDS, DEFAULT_TOTAL_SECONDS, Budget

__all__ = ["DEFAULT_MEMORY_MB", "DEFAULT_PASS_SECONDS", "DEFAULT_TOTAL_SECONDS", "budget_of", "compile_many", "options"]

F = TypeVar("F", bound=Callable[..., Any])


def options(f: F) -> F:
    """The compile command's ``-j`` and budget options."""
    f = click.option("-j", "--jobs", type=click.IntRange(1, 256), default=1, show_default=True,
                     help="With several inputs: compile them in this many worker processes.")(f)
    f = click.option("--max-memory", type=click.FloatRange(min=1.0), default=DEFAULT_MEMORY_MB, show_default=True,
                     metavar="MB", help="Resident memory past which a pass stops (as --max-pass-seconds).")(f)
    f = click.option("--max-seconds", type=click.FloatRange(min=0.0), default=DEFAULT_TOTAL_SECONDS,
                     show_default=True, metavar="S",
                     help="Time of all passes of one input together; passes past it stop or do not run.")(f)
    f = click.option("--max-pass-seconds", type=click.FloatRange(min=0.0), default=DEFAULT_PASS_SECONDS,
                     show_default=True, metavar="S",
                     help="Time a pass may take on one kernel; past it the pass stops with the IR it has "
                          "(correct, less optimised) and warns [-Wpass-budget].")(f)
    return f


def budget_of(max_pass_seconds: float, max_seconds: float, max_memory: float) -> Budget:
    return Budget(pass_seconds=max_pass_seconds, total_seconds=max_seconds, memory_mb=max_memory)


_WORK: tuple[Callable[..., None], dict[str, Any]] | None = None  # for forked workers: the command and its options


def compile_many(callback: Callable[..., None], params: dict[str, Any], files: Sequence[Path], output: str | None,
                 emit: str, jobs: int) -> None:
    """Compile each of ``files`` with ``callback(**params)`` (the compile command), one input at a time;
    exit 1 if any failed."""
    global _WORK
    if output == "-":
        raise click.BadParameter("several inputs need an output directory, not '-'", param_hint="'-o'")
    suffix = ".ir" if emit == "ir" else ".cu"
    if output is not None:
        out = Path(output)
        if out.exists() and not out.is_dir():
            raise click.BadParameter(f"several inputs need an output directory; '{out}' is a file",
                                     param_hint="'-o'")
        out.mkdir(parents=True, exist_ok=True)
        dests = [out / (f.stem + suffix) for f in files]
    else:
        dests = [f.with_suffix(suffix) for f in files]
    seen: dict[Path, Path] = {}
    for f, d in zip(files, dests):
        if d in seen:
            raise click.BadParameter(f"'{seen[d]}' and '{f}' would both be written to '{d}'", param_hint="FILE...")
        seen[d] = f
    _WORK = (callback, params)
    work = list(zip(files, dests))
    if jobs == 1:
        statuses = [_one(item, capture=False)[0] for item in work]
    else:
        import multiprocessing

        statuses = []
        with multiprocessing.get_context("fork").Pool(min(jobs, len(work))) as pool:
            for status, text in pool.imap(_one, work):
                sys.stderr.write(text)
                sys.stderr.flush()
                statuses.append(status)
    failed = sum(s != 0 for s in statuses)
    if failed:
        click.echo(f"transpile: {failed} of {len(files)} inputs failed", err=True)
        sys.exit(1)


def _one(item: tuple[Path, Path], capture: bool = True) -> tuple[int, str]:
    """Compile one input as a one-input call would; its exit status and (if ``capture``) its stderr."""
    assert _WORK is not None
    callback, params = _WORK
    f, dest = item
    err = io.StringIO()
    with contextlib.redirect_stderr(err) if capture else contextlib.nullcontext():
        try:
            callback(**{**params, "file": (f,), "output": str(dest), "jobs": 1})
            status = 0
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
        except click.ClickException as e:
            e.show()
            status = e.exit_code
    return status, err.getvalue()

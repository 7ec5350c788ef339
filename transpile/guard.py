"""The error guard: a user's error is ``file:line:col: error: msg`` on stderr and exit status 1.

The one module every command runs its work through (``transpile``, its subcommands, the LLM
repair and the evaluator): a :class:`~transpile.diagnostics.TranspileError` prints as compilers print
(with the source line and a caret, in colour on a terminal), our own bug as one internal-error line
and exit status 2 (a traceback only with ``TRANSPILE_TRACEBACK`` set), never a traceback otherwise.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import click

from transpile import progress
from transpile.diagnostics import TranspileError


def source_of(loc: object) -> str | None:
    """The text of the file ``loc`` points into (for the caret line), or None."""
    try:
        return Path(loc.file).read_text() if loc is not None else None  # type: ignore[attr-defined]
    except (OSError, UnicodeDecodeError):
        return None


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: object = None, line: str | None = None) -> None:
    """Our warnings as compilers print them (``file:line:col: warning: msg [id]``); others as Python does."""
    from transpile.diagnostics import TranspileWarning

    if isinstance(message, TranspileWarning):
        progress.clear()
        click.echo(_colored(str(message)), err=True)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)  # type: ignore[arg-type]


_python_show_warning = warnings.showwarning


def _colored(text: str) -> str:
    """A diagnostic in clang's colours on a terminal (not with NO_COLOR), else as it is."""
    from transpile.diagnostics import paint, use_color

    return paint(text) if use_color(sys.stderr) else text


def guard(action: object) -> None:
    """Run ``action``; turn diagnostics into stderr + exit 1, never a traceback."""
    warnings.showwarning = _show_warning
    try:
        action()  # type: ignore[operator]
    except TranspileError as e:
        if e.source is None and e.loc is not None:  # raised past the front end: the caret line still helps
            e.source = source_of(e.loc)
        click.echo(_colored(str(e)), err=True)
        sys.exit(1)
    except (KeyboardInterrupt, click.exceptions.Exit, click.ClickException):
        raise
    except Exception as e:  # our bug, not the user's: still no traceback on their screen
        click.echo(f"transpile: internal compiler error: {type(e).__name__}: {e}\n"
                   "transpile: please report this with the input file "
                   "(set TRANSPILE_TRACEBACK=1 for the traceback)", err=True)
        if os.environ.get("TRANSPILE_TRACEBACK"):
            raise
        sys.exit(2)

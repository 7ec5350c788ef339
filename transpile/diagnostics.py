"""Source locations and the one user-facing error type.

Every front end maps its positions into :class:`Loc`; every user-visible
failure is a :class:`TranspileError`, whose ``str()`` is the gcc-style
``file:line:col: error: msg`` line, optionally followed by the source line and
a caret.  The CLI prints it and exits with status 1; users never see a
traceback.

Warnings (:func:`warn`) print as clang's: ``file:line:col: warning: msg
[-WID]``, the source line and a caret; ``-w`` turns them off, ``-Wno-ID``
silences one, ``-Werror`` / ``-Werror=ID`` makes them errors
(:func:`configure`, docs/cli.md).  :func:`paint` colours a diagnostic as clang
does when :func:`use_color` says the stream is a terminal (``NO_COLOR`` set, or
``TERM=dumb``: no colour).
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from typing import Any, TextIO

#: The warnings' ids (``-W<id>``, ``-Wno-<id>``, ``--silence <id>``).
WARNINGS = ("out-of-bounds", "uninitialized", "flat-index", "dropped-call", "unchecked-step")


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in a source file; ``line`` and ``col`` are 1-based."""

    file: str
    line: int
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def line_directive(line: int, file: str) -> str:
    """``#line LINE "FILE"`` (no newline): text after it is ``file``'s from ``line`` on, in the
    compiler's messages (the file name as a C string literal)."""
    quoted = file.replace("\\", "\\\\").replace('"', '\\"')
    return f'#line {line} "{quoted}"'


class TranspileError(Exception):
    """A diagnostic for the user: bad input or an unsupported construct.

    ``source`` is the text of the file ``loc`` points into, when known; it is
    used to print the offending line with a caret under the column.
    """

    def __init__(self, loc: Loc | None, msg: str, *, source: str | None = None) -> None:
        super().__init__(msg)
        self.loc = loc
        self.msg = msg
        self.source = source

    @property
    def headline(self) -> str:
        """The one-line ``file:line:col: error: msg`` form."""
        where = f"{self.loc}: " if self.loc is not None else "transpile: "
        return f"{where}error: {self.msg}"

    def __str__(self) -> str:
        return self.headline + _caret(self.source, self.loc)


def _caret(source: str | None, loc: Loc | None) -> str:
    """The source line of ``loc`` and a caret under its column (each on a new line), or ``""``."""
    if source is None or loc is None:
        return ""
    lines = source.splitlines()
    if not 1 <= loc.line <= len(lines):
        return ""
    line = lines[loc.line - 1].expandtabs(1)
    return f"\n{line}\n{' ' * max(loc.col - 1, 0)}^"


def _read(loc: Loc | None) -> str | None:
    """The text of the file ``loc`` points into, or None."""
    if loc is None:
        return None
    try:
        with open(loc.file, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


class TranspileWarning(UserWarning):
    """A warning with a stable id, silenced with ``--silence ID``."""

    def __init__(self, wid: str, loc: Loc | None, msg: str) -> None:
        super().__init__(msg)
        self.wid = wid
        self.loc = loc
        self.msg = msg

    def __str__(self) -> str:
        where = f"{self.loc}: " if self.loc is not None else "transpile: "
        return f"{where}warning: {self.msg} [-W{self.wid}]" + _caret(_read(self.loc), self.loc)


_silenced: set[str] = set()
_state: dict[str, Any] = {"off": False, "errors": frozenset()}


def silence(wid: str) -> None:
    """Suppress the warning with id ``wid`` for the rest of the process."""
    _silenced.add(wid)


def configure(*, off: bool = False, errors: frozenset[str] = frozenset()) -> None:
    """``-w`` (``off``: no warnings) and ``-Werror[=ID]`` (``errors``: ids, or ``all``) for the process."""
    _state["off"], _state["errors"] = off, errors


def warn(wid: str, loc: Loc | None, msg: str) -> None:
    """Issue warning ``wid`` unless it has been silenced (an error under ``-Werror``)."""
    if _state["off"] or wid in _silenced:
        return
    if wid in _state["errors"] or "all" in _state["errors"]:
        raise TranspileError(loc, f"{msg} [-Werror,-W{wid}]", source=_read(loc))
    warnings.warn(TranspileWarning(wid, loc, msg), stacklevel=2)


def use_color(stream: TextIO) -> bool:
    """Colour for ``stream``: a terminal, ``NO_COLOR`` unset or empty, ``TERM`` not ``dumb``."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


_HEAD = re.compile(r"^(?P<where>\S+:\d+:\d+: |transpile: )?(?P<kind>error|warning|note): (?P<msg>.*)$")
_COLORS = {"error": "31", "warning": "35", "note": "36"}  # clang's red, magenta, cyan


def paint(text: str) -> str:
    """A diagnostic (headline, source line, caret) with clang's colours: bold location and message,
    the kind in its colour, the caret green."""
    lines = text.split("\n")
    m = _HEAD.match(lines[0])
    if m is None:
        return text
    where = f"\x1b[1m{m['where']}\x1b[0m" if m["where"] else ""
    lines[0] = f"{where}\x1b[1;{_COLORS[m['kind']]}m{m['kind']}:\x1b[0m \x1b[1m{m['msg']}\x1b[0m"
    if len(lines) == 3 and lines[2].strip() == "^":
        lines[2] = f"\x1b[1;32m{lines[2]}\x1b[0m"
    return "\n".join(lines)

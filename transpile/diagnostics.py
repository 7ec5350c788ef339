"""Source locations and the one user-facing error type.

Every front end maps its positions into :class:`Loc`; every user-visible
failure is a :class:`TranspileError`, whose ``str()`` is the gcc-style
``file:line:col: error: msg`` line, optionally followed by the source line and
a caret.  The CLI prints it and exits with status 1; users never see a
traceback.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Loc:
    """A position in a source file; ``line`` and ``col`` are 1-based."""

    file: str
    line: int
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


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
        text = self.headline
        if self.source is not None and self.loc is not None:
            lines = self.source.splitlines()
            if 1 <= self.loc.line <= len(lines):
                line = lines[self.loc.line - 1].expandtabs(1)
                caret = " " * max(self.loc.col - 1, 0) + "^"
                text += f"\n{line}\n{caret}"
        return text


class TranspileWarning(UserWarning):
    """A warning with a stable id, silenced with ``--silence ID``."""

    def __init__(self, wid: str, loc: Loc | None, msg: str) -> None:
        super().__init__(msg)
        self.wid = wid
        self.loc = loc
        self.msg = msg

    def __str__(self) -> str:
        where = f"{self.loc}: " if self.loc is not None else ""
        return f"{where}warning: {self.msg} [{self.wid}]"


_silenced: set[str] = set()


def silence(wid: str) -> None:
    """Suppress the warning with id ``wid`` for the rest of the process."""
    _silenced.add(wid)


def warn(wid: str, loc: Loc | None, msg: str) -> None:
    """Issue warning ``wid`` unless it has been silenced."""
    if wid not in _silenced:
        warnings.warn(TranspileWarning(wid, loc, msg), stacklevel=2)

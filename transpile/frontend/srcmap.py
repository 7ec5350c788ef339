"""Map positions in preprocessed C back to the original source files.

``gcc -E`` keeps line markers (``# 12 "gemm.c"``), so pycparser's coords
already carry the original file and line.  Columns are another matter: the
preprocessor collapses runs of blanks and expands macros in place, so a
token's column in the preprocessed line can differ from its column in the file
the user wrote.  :class:`SourceMap` realigns them: it tokenises both versions
of the line and matches the token sequences (``difflib``); a token that came
out of a macro expansion maps to the start of the macro invocation.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

from transpile.diagnostics import Loc

# A rough C tokeniser, good enough to align two versions of one line: comments
# and blanks are skipped, literals and identifiers are single tokens.
_TOKEN = re.compile(
    r"""
    (?P<skip> \s+ | /\*.*?(?:\*/|$) | //.* )
  | (?P<tok>
        [LuU]?'(?:\\.|[^\\'])*'? | (?:u8|[LuU])?"(?:\\.|[^\\"])*"?
      | \.?[0-9](?:[eEpP][+-]|[A-Za-z0-9_.])*
      | [A-Za-z_][A-Za-z_0-9]*
      | <<=|>>=|\.\.\.|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!=<>]=|\#\#
      | .
    )
    """,
    re.VERBOSE,
)
_MARKER = re.compile(r'#\s*(?:line\s+)?(\d+)\s+"((?:\\.|[^"\\])*)"')


def _tokens(line: str) -> list[tuple[str, int]]:
    """(text, 0-based start column) of each token on ``line``."""
    return [(m.group("tok"), m.start()) for m in _TOKEN.finditer(line) if m.group("tok")]


class SourceMap:
    """Original texts and preprocessed lines, for exact ``Loc``s.

    ``texts`` maps a file name (as it appears in line markers) to its text;
    files not given are read from disk on demand.
    """

    def __init__(self, texts: dict[str, str]) -> None:
        self._texts: dict[str, str | None] = dict(texts)
        self._pp_lines: dict[tuple[str, int], str] = {}
        self._col_cache: dict[tuple[str, int], list[tuple[int, int, int, bool]] | None] = {}
        self._lines: dict[str, list[str]] = {}

    def add_preprocessed(self, pp_text: str) -> None:
        """Record which original line each preprocessed line came from."""
        file, line = "", 1
        for raw in pp_text.split("\n"):
            m = _MARKER.match(raw)
            if m is not None and raw.lstrip().startswith("#"):
                file, line = m.group(2), int(m.group(1))
                continue
            self._pp_lines.setdefault((file, line), raw)
            line += 1

    def text(self, file: str) -> str | None:
        """The text of ``file`` (None if it cannot be read)."""
        if file not in self._texts:
            try:
                self._texts[file] = Path(file).read_text(encoding="utf-8", errors="replace")
            except OSError:
                self._texts[file] = None
        return self._texts[file]

    def _orig_line(self, file: str, line: int) -> str | None:
        if file not in self._lines:
            text = self.text(file)
            self._lines[file] = text.split("\n") if text is not None else []
        lines = self._lines[file]
        return lines[line - 1] if 1 <= line <= len(lines) else None

    def loc(self, file: str, line: int, col: int | None) -> Loc:
        """The ``Loc`` in the original file of a preprocessed position."""
        if col is None or col < 1:
            return Loc(file, line, 1)
        return Loc(file, line, self._map_col(file, line, col))

    def _map_col(self, file: str, line: int, col: int) -> int:
        key = (file, line)
        if key not in self._col_cache:
            self._col_cache[key] = self._align(key)
        table = self._col_cache[key]
        if table is None:
            return col
        # table: (pp start, pp end, original start, exact) per preprocessed token.
        for start, end, orig, exact in table:
            if col - 1 < end:
                inside = col - 1 - start if exact and col - 1 >= start else 0
                return orig + inside + 1
        return col

    def _align(self, key: tuple[str, int]) -> list[tuple[int, int, int, bool]] | None:
        pp = self._pp_lines.get(key)
        orig = self._orig_line(*key)
        if pp is None or orig is None or pp == orig:
            return None
        pt, ot = _tokens(pp), _tokens(orig)
        if not pt or not ot:
            return None
        out: list[tuple[int, int, int, bool]] = []
        matcher = difflib.SequenceMatcher(None, [t for t, _ in pt], [t for t, _ in ot], autojunk=False)
        for tag, i1, i2, j1, _j2 in matcher.get_opcodes():
            for k in range(i1, i2):
                text, start = pt[k]
                if tag == "equal":
                    out.append((start, start + len(text), ot[j1 + k - i1][1], True))
                else:
                    # Came out of a macro expansion: point at the invocation.
                    out.append((start, start + len(text), ot[min(j1, len(ot) - 1)][1], False))
        return out

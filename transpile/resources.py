"""Where the grammar and template files live, computed once.

In a checkout (and an editable install) they sit beside the packages at the
repository root; an installed wheel carries them under ``transpile/_data``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """The directory holding the ``grammars`` or ``templates`` data files."""
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"transpile data directory {name!r} is missing from the installation")

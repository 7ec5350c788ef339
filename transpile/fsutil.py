"""Files written whole: readers see the old file or the new one, never a part.

The one module that writes output files atomically (the command line's outputs, the schedule cache,
the LLM repair's files).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from transpile.diagnostics import TranspileError


def write_atomic(dest: Path, text: str) -> None:
    """Write ``text`` to ``dest`` so that readers see the old file or the whole new one."""
    try:
        fd, tmp = tempfile.mkstemp(dir=dest.parent or Path("."), prefix=f".{dest.name}.", suffix=".tmp")
    except OSError as e:
        raise TranspileError(None, f"cannot write '{dest}': {e.strerror}") from None
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        # mkstemp creates the file 0600; give it the mode a plain open() would
        # (the existing file's, else 0666 less the umask).
        os.chmod(tmp, _new_file_mode(dest))
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _new_file_mode(dest: Path) -> int:
    try:
        return dest.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask

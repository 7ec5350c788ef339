"""docs/parallelism.md's table is what the compiler does today (regenerate with its script)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_parallelism_table_is_current() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "docs" / "parallelism_table.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr

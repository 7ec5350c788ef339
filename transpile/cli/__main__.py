"""``python -m transpile.cli``: the command line."""

from __future__ import annotations

from transpile.cli import main

main()

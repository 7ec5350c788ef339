"""``python -m transpile.cli``: the command line."""

from __future__ import annotations

from transpile.cli import main

if __name__ == "__main__":
    main()

"""``python -m transpile``: the command line (transpile.cli)."""

from transpile.cli import main

main()

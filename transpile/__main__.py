"""``python -m transpile``: the command line (transpile.cli)."""

from transpile.cli import main

if __name__ == "__main__":
    main()

"""The command line, run many times without paying Python's start-up each time: a fork server.

``python -m tests.cli_server`` imports the compiler once, then reads one JSON list of arguments a line
on stdin and, for each, forks a child that runs ``transpile.cli.main(ARGS)`` (what ``transpile ARGS``
and ``python -m transpile.cli ARGS`` run) and exits with its status; the server answers one JSON line
``{"rc": STATUS, "stdout": ..., "stderr": ...}`` with what the child wrote to its file descriptors 1
and 2.  A child is a fresh CLI process short of the interpreter's start-up and the imports: nothing one
call computes is seen by the next, since every call forks from the same parent.

What the parent does before it forks (:func:`warm`), each fresh process does the same way on its first
compile: import the modules a compile imports, parse the emitter's templates, and ask once whether
there is a GPU (:func:`transpile.verify.gpu.detect`, cached per process; the same machine gives the
same answer).  That costs about a second a process here (``PYTHONDONTWRITEBYTECODE`` makes every
start compile some 150 modules from source), next to 3-4 s of work for a corpus file
(tests/test_ordinary.py).

A call that runs longer than ``TIMEOUT`` seconds is killed (``SIGALRM``, status -14).
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

TIMEOUT = 600

#: What a compile with verification imports (the first compile of a fresh process imports them), besides
#: every module of ``passes``.
WARM = ("numpy", "numpy.random", "lark", "regex", "multiprocessing.popen_fork", "transpile.cli",
        "transpile.cli.options", "transpile.driver", "transpile.pipeline", "transpile.ir.text", "transpile.cuda",
        "transpile.cuda.arches", "transpile.cuda.host", "transpile.frontend.c", "transpile.search.evolve",
        "transpile.verify.stages", "transpile.verify.simstage", "transpile.verify.gpu", "transpile.verify.reference",
        "transpile.verify.symbols", "transpile.sim.build")


def warm() -> None:
    """Import what a compile imports, parse the emitter's templates (each process parses them once, on
    first use), and ask whether there is a GPU (once a process)."""
    import importlib
    import pkgutil

    import passes

    for name in WARM:
        importlib.import_module(name)
    for info in pkgutil.iter_modules(passes.__path__):
        importlib.import_module(f"passes.{info.name}")
    from transpile.cuda.printer import environment
    from transpile.verify import gpu

    env = environment()
    for name in env.list_templates():
        env.get_template(name)
    gpu.detect()


def _child(args: list[str], cwd: str, out: int, err: int) -> None:
    """Run the command line in this (forked) process, in ``cwd``, with its output on ``out`` and ``err``;
    never returns."""
    code = 1
    try:
        os.chdir(cwd)
        os.dup2(out, 1)
        os.dup2(err, 2)
        signal.alarm(TIMEOUT)
        from transpile.cli import main

        try:
            main.main(args=args, prog_name="transpile")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        atexit._run_exitfuncs()  # what the interpreter runs at exit
    except BaseException:  # as Python reports an uncaught exception: a traceback, status 1
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def run(args: list[str], cwd: str) -> dict[str, object]:
    """``transpile ARGS`` in a forked child started in ``cwd``: its exit status and output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            _child(args, cwd, out.fileno(), err.fileno())
        _, status = os.waitpid(pid, 0)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode(errors="replace"))
    return {"rc": os.waitstatus_to_exitcode(status), "stdout": texts[0], "stderr": texts[1]}


def serve() -> None:
    warm()
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            sys.stdout.write(json.dumps(run(request["args"], request["cwd"])) + "\n")
            sys.stdout.flush()


class Client:
    """A server started in a subprocess (in the repository's root, as ``python -m transpile.cli`` is run
    there); :meth:`run` asks it for one call, run in the caller's directory."""

    def __init__(self) -> None:
        root = Path(__file__).resolve().parent.parent
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.cli_server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=root)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        assert first == "ready\n", f"the CLI server did not start: {first!r}"

    def run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        """``transpile ARGS``: its status, stdout and stderr, as ``subprocess.run`` gives them."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"args": [str(a) for a in args], "cwd": os.getcwd()}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the CLI server stopped"
        got = json.loads(line)
        return subprocess.CompletedProcess(["transpile", *args], got["rc"], got["stdout"], got["stderr"])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


if __name__ == "__main__":
    serve()

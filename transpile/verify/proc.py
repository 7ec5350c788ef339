"""Running code in a child process, so that a crash or a hang is a reported failure.

:func:`fork_stream` forks a child that runs ``fn(send)``; every ``send(msg)``
reaches the parent at once, so when the child dies the parent knows how far
it got.  The child's stdout and stderr go to a temporary file (a candidate's
``printf`` never mixes with the verifier's output); the tail of it comes back
with a crash.  :func:`fork_call` is the one-result form.  With ``group=True`` the child leads
a process group of its own, and a timeout or a crash kills the whole group, so
the compilers and simulators it started die with it (how
:mod:`transpile.evaluate` isolates a whole verification).

Forking is safe here because the verifier's parent process never initialises
CUDA (the GPU stages run in a separately started interpreter, see
:mod:`transpile.verify.gpu`).
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_DONE = "__done__"


@dataclass
class ChildError(Exception):
    """The child died (``kind`` ``crash``), ran out of time (``timeout``) or raised (``error``)."""

    kind: str
    message: str
    output: str = ""

    def __str__(self) -> str:
        return self.message


def _describe(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


def _child(conn: Any, fn: Callable[[Callable[[Any], None]], Any], out_fd: int, group: bool = False) -> None:
    if group:
        os.setpgid(0, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    # NOTE: fresh stdio objects.  The inherited sys.stdout/sys.stderr carry their buffer locks as
    # they were at the fork: if another thread of the parent was writing (a progress line), the
    # lock is held for ever here, and this child's first print or warning would hang until the
    # parent's timeout.
    sys.stdout = open(1, "w", closefd=False, buffering=1)  # noqa: SIM115 - lives until os._exit
    sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115
    if faulthandler.is_enabled():  # its report of a crash goes to the captured output too
        faulthandler.enable(file=2)
    try:
        result = fn(conn.send)
    except BaseException as e:  # reported to the parent, which decides
        conn.send(("__error__", f"{type(e).__name__}: {e}", traceback.format_exc()))
    else:
        conn.send((_DONE, result))
    conn.close()
    os._exit(0)  # skip atexit handlers inherited from the parent (pytest, multiprocessing)


def fork_stream(fn: Callable[[Callable[[Any], None]], Any], *, timeout: float,
                what: str = "the child", group: bool = False,
                started: Callable[[int], None] | None = None) -> tuple[list[Any], Any, ChildError | None]:
    """Run ``fn(send)`` in a forked child with a ``timeout`` (seconds, for the whole run).

    Returns ``(messages, result, error)``: what the child sent, what ``fn``
    returned (None if it did not return), and why it did not (None if it did).
    ``group``: the child leads its own process group, killed as a whole when
    the child is done, dies or times out.  ``started(pid)`` is called once the
    child runs (with ``group``, its pid is the group id: a caller that gives
    up early kills it with ``os.killpg``).
    """
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    messages: list[Any] = []
    with tempfile.TemporaryFile() as out:
        proc = ctx.Process(target=_child, args=(send, fn, out.fileno(), group))
        proc.start()
        send.close()
        pid = proc.pid
        assert pid is not None, "a started process has a pid"
        if group:
            try:  # also here, so that a kill right after start finds the group
                os.setpgid(pid, pid)
            except OSError:  # the child got there first, or is gone already
                pass
        if started is not None:
            started(pid)
        deadline = time.monotonic() + timeout
        error: ChildError | None = None
        result: Any = None
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    _reap(proc, group, kill=True)
                    error = ChildError("timeout", f"{what} did not finish within {timeout:g} s", _tail(out))
                    break
                if not recv.poll(min(left, 0.1)):
                    # NOTE: a child that dies is not always seen as EOF: a sibling forked by another
                    # thread at the same moment inherits this pipe's write end and keeps it open.
                    if proc.exitcode is not None and not recv.poll(0):
                        _reap(proc, group)
                        error = ChildError("crash", f"{what} died ({_describe(proc.exitcode)})", _tail(out))
                        break
                    continue
                try:
                    msg = recv.recv()
                except EOFError:
                    _reap(proc, group)
                    error = ChildError("crash", f"{what} died ({_describe(proc.exitcode)})", _tail(out))
                    break
                if isinstance(msg, tuple) and msg and msg[0] == _DONE:
                    result = msg[1]
                    _reap(proc, group)
                    break
                if isinstance(msg, tuple) and msg and msg[0] == "__error__":
                    _reap(proc, group)
                    error = ChildError("error", f"{what} raised {msg[1]}", msg[2])
                    break
                messages.append(msg)
        finally:
            recv.close()
            if proc.exitcode is None:  # left by an exception in this process
                _reap(proc, group, kill=True)
    return messages, result, error


def _reap(proc: Any, group: bool, *, kill: bool = False) -> None:
    """Wait for the child (killed first with ``kill``), then kill what is left of its group.

    Reaping the leader first keeps its own exit status (a crash's signal); the
    group id cannot be reused meanwhile, since Linux keeps a pid while a
    process group of that id has members.
    """
    if kill and proc.exitcode is None:
        if group:
            _killpg(proc.pid)
        proc.kill()
    proc.join()
    if group:
        _killpg(proc.pid)


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:  # no such group: nothing left
        pass


def fork_call(fn: Callable[[], Any], *, timeout: float, what: str = "the child") -> Any:
    """``fn()`` computed in a forked child; raises :class:`ChildError` if it crashes, hangs or raises."""
    _, result, error = fork_stream(lambda send: fn(), timeout=timeout, what=what)
    if error is not None:
        raise error
    return result


def _tail(f: Any, limit: int = 4000) -> str:
    f.flush()
    f.seek(0, os.SEEK_END)
    size = f.tell()
    f.seek(max(0, size - limit))
    return f.read().decode(errors="replace")

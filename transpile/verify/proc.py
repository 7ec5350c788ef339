"""Running code in a child process, so that a crash or a hang is a reported failure.

:func:`fork_stream` forks a child that runs ``fn(send)``; every ``send(msg)``
reaches the parent at once, so when the child dies the parent knows how far
it got.  The child's stdout and stderr go to a temporary file (a candidate's
``printf`` never mixes with the verifier's output); the tail of it comes back
with a crash.  :func:`fork_call` is the one-result form.  With ``group=True`` the child leads
a process group of its own, and a timeout or a crash kills the whole group, so
the compilers and simulators it started die with it (how
:mod:`transpile.search.evaluate` isolates a whole verification).

Forking is safe here because the verifier's parent process never initialises
CUDA (the GPU stages run in a separately started interpreter, see
:mod:`transpile.verify.gpu`), and because of what is done about other threads
of the parent: a fork copies only the forking thread, so a lock another thread
holds at that moment stays held for ever in the child.  Three rules:

* The parent's side of a fork (the pipe, the output file, the fork itself,
  closing the parent's copy of the write end) is done under one lock,
  ``_FORK_LOCK``: two threads never fork at once, a child never inherits
  another child's pipe (so a child's death is seen as EOF), and no thread is
  inside ``tempfile`` or a first import of :mod:`multiprocessing` here while
  another forks.
* A fork handler gives the child fresh copies of the locks known to be taken
  in the child (``_FORK_LOCK``, ``tempfile``'s one-time set-up lock: a child
  hung on it until the 600 s timeout in the ``verify --group`` test).  The
  stdio objects are made afresh in :func:`_child`.
* Every wait of the parent is bounded: the child's ``timeout``, then a short
  grace to exit after it reported, closed its pipe or was killed.

:mod:`transpile.search.evaluate` also forks from one thread only, and starts no other.
"""

from __future__ import annotations

import faulthandler
import multiprocessing
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait as _wait
from typing import Any

_DONE = "__done__"
POLL = 0.1  # seconds between looks at the child's exit status while nothing else comes
GRACE = 5.0  # seconds a child has to exit after it reported, closed its pipe or was killed
STARVED = 0.5  # a child (not a group) that has used less than this share of its timeout in CPU time at the
# wall-clock deadline was starved by a loaded machine, not slow: its deadline moves (see Forked.check)
WALL_CAP = 3.0  # ... up to this many timeouts of wall-clock time in all
_FORK_LOCK = threading.Lock()  # held by the parent's side of every fork made here (module docstring)


def _after_fork_in_child() -> None:
    """Fresh locks in a child of any fork: a lock held by another thread of the parent at the fork
    (that thread is not in the child) would be held for ever.  The child has one thread, so a new
    lock is what the old one would be once its holder released it."""
    global _FORK_LOCK
    _FORK_LOCK = threading.Lock()
    # NOTE: tempfile takes _once_lock on the first gettempdir() and the first mkstemp()/mkdtemp()
    # of a process; the parent's threads may be in the first while a child runs the second.
    once = getattr(tempfile, "_once_lock", None)
    if once is not None:  # a plain lock in CPython 3.11-3.13
        fresh = threading.RLock() if isinstance(once, type(threading.RLock())) else threading.Lock()
        tempfile._once_lock = fresh  # type: ignore[attr-defined]


os.register_at_fork(after_in_child=_after_fork_in_child)


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


class Forked:
    """A child running ``fn(send)`` (see :func:`fork_stream`), watched without blocking.

    :meth:`start` forks it; :meth:`check` takes what it sent and says whether it
    is finished, waiting at most the seconds asked (never past ``timeout``);
    then ``messages``, ``result`` and ``error`` are :func:`fork_stream`'s answer.
    :meth:`close` kills it (with its group) if it is not finished.  Several are
    watched from one thread by waiting on all their :meth:`waitables`.
    """

    def __init__(self, fn: Callable[[Callable[[Any], None]], Any], *, timeout: float, what: str = "the child",
                 group: bool = False) -> None:
        self.fn, self.timeout, self.what, self.group = fn, timeout, what, group
        self.messages: list[Any] = []
        self.result: Any = None
        self.error: ChildError | None = None
        self.done = False
        self.pid: int | None = None
        self.started = 0.0
        self.deadline = float("inf")
        self._eof = False  # the pipe is closed: only the child's exit is left to wait for
        self._reaped = False

    def start(self) -> int:
        """Fork the child; its pid (with ``group``, its process group's id)."""
        ctx = multiprocessing.get_context("fork")
        with _FORK_LOCK:
            recv, send = ctx.Pipe(duplex=False)
            out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close()
            try:
                proc = ctx.Process(target=_child, args=(send, self.fn, out.fileno(), self.group))
                proc.start()
            except BaseException:
                recv.close()
                out.close()
                raise
            finally:
                send.close()
        self._recv, self._out, self._proc = recv, out, proc
        pid = proc.pid
        assert pid is not None, "a started process has a pid"
        if self.group:
            try:  # also here, so that a kill right after start finds the group
                os.setpgid(pid, pid)
            except OSError:  # the child got there first, or is gone already
                pass
        self.pid = pid
        self.started = time.monotonic()
        self.deadline = self.started + self.timeout
        return pid

    def waitables(self) -> list[Any]:
        """What becomes ready when there is news: the pipe (until EOF) and the child's exit."""
        return [self._proc.sentinel] if self._eof else [self._recv, self._proc.sentinel]

    def check(self, wait: float = 0.0) -> bool:
        """Take what the child sent, waiting up to ``wait`` seconds for it to finish; True once it has."""
        until = time.monotonic() + wait
        while not self.done:
            now = time.monotonic()
            if now >= self.deadline and not self._reaped and not self._starved(now):
                # NOTE: killed first, then what it sent is read: a result that was waiting in the pipe
                # (this process looked late: a caller busy between two checks) is not a timeout.
                self._reap(kill=True)
            if not self._eof and self._recv.poll(0):
                try:
                    msg = self._recv.recv()
                except EOFError:
                    self._eof = True
                    continue
                self._take(msg)
                continue
            # NOTE: a child that dies is not always seen as EOF, nor its sentinel as ready (a process it
            # forked, or a fork from a thread outside _FORK_LOCK, may hold their write ends: hence the
            # POLL), and EOF is not always a death (a child can close its pipe and go on): its exit is
            # what counts, or else the timeout.
            if self._proc.exitcode is not None or self._reaped:
                if not self._eof and self._recv.poll(0):  # what it sent before dying comes first
                    continue
                self._finish("timeout" if now >= self.deadline else "crash")
                break
            if now >= until:
                return False
            _wait(self.waitables(), min(self.deadline, until, now + POLL) - now)
        return True

    def _starved(self, now: float) -> bool:
        """At the wall-clock deadline: whether the child used less than :data:`STARVED` of its timeout in
        CPU time (a machine loaded by other work: the verifier under ``pytest -n``, an RL trainer's
        parallel rewards), and then a later deadline, up to :data:`WALL_CAP` timeouts after the start.
        A correct candidate slowed by the load is not failed as a hang; a hang that spins uses its CPU
        time and is timed out as before; one that sleeps is at the cap.  Not for a group (its leader
        waits for the compilers it runs, whose time is not its own until they end) nor without
        ``/proc``."""
        if self.group or self.pid is None:
            return False
        cpu = _cpu_seconds(self.pid)
        cap = self.started + WALL_CAP * self.timeout
        if cpu is None or cpu >= STARVED * self.timeout or now >= cap:
            return False
        self.deadline = min(cap, now + max(self.timeout - cpu, POLL))
        return True

    def _take(self, msg: Any) -> None:
        if isinstance(msg, tuple) and msg and msg[0] == _DONE:
            self.result = msg[1]
            self._finish(None)
        elif isinstance(msg, tuple) and msg and msg[0] == "__error__":
            self._finish(None)
            self.error = ChildError("error", f"{self.what} raised {msg[1]}", msg[2])
        else:
            self.messages.append(msg)

    def _reap(self, *, kill: bool = False) -> None:
        if not self._reaped:  # once: after the leader is reaped its group id may be reused
            self._reaped = True
            _reap(self._proc, self.group, kill=kill)

    def _finish(self, kind: str | None) -> None:
        self._reap()
        if kind == "timeout":
            self.error = ChildError("timeout", f"{self.what} did not finish within {self.timeout:g} s",
                                    _tail(self._out))
        elif kind == "crash":
            self.error = ChildError("crash", f"{self.what} died ({_describe(self._proc.exitcode)})",
                                    _tail(self._out))
        self.done = True

    def close(self) -> None:
        """Kill the child with its group if it is not finished (a caller giving up); free the pipe
        and the output file."""
        if not hasattr(self, "_proc"):
            return
        if not self.done:
            self._reap(kill=True)
        self._recv.close()
        self._out.close()


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
    child = Forked(fn, timeout=timeout, what=what, group=group)
    try:
        pid = child.start()
        if started is not None:
            started(pid)
        while not child.check(timeout + GRACE):
            pass
    finally:
        child.close()  # kills it only if left by an exception in this process
    return child.messages, child.result, child.error


def _cpu_seconds(pid: int) -> float | None:
    """CPU seconds process ``pid`` has used, its ended children's included (``/proc``; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2:].split()  # from field 3 (state): the name may hold spaces
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime
    except (OSError, ValueError, IndexError):
        return None


def _reap(proc: Any, group: bool, *, kill: bool = False) -> None:
    """Wait for the child (killed first with ``kill``), then kill what is left of its group.

    Reaping the leader first keeps its own exit status (a crash's signal); the
    group id cannot be reused meanwhile, since Linux keeps a pid while a
    process group of that id has members.  Every wait is bounded: a child that
    does not exit within ``GRACE`` after it finished is killed, and one that
    still does not (stuck in the kernel) is left behind rather than waited for.
    """
    if kill and proc.exitcode is None:
        if group:
            _killpg(proc.pid)
        proc.kill()
    proc.join(GRACE)
    if proc.exitcode is None:  # reported, or closed its pipe, yet goes on
        if group:
            _killpg(proc.pid)
        proc.kill()
        proc.join(GRACE)
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

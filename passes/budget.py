"""A time and memory budget for the passes: a pass that would run past its share stops, correct.

Generated C (code generators, expanded macros) can hold thousands of statements, and a pass's
worst case is worse than linear in them; a build that hangs or exhausts a CI machine's memory is
worse than one that is less optimised.  :func:`transpile.pipeline.lower` runs every optional
pass inside :func:`scope` with its share (``pass_seconds``, at most what is left of
``total_seconds``, and ``memory_mb`` of resident memory); the work loops of the passes and of
the dependence analysis call :func:`check`, which raises :class:`BudgetExceeded` once the scope
is past its deadline or the process past its memory.  Then:

* a pass that works in complete steps (fusion, distribution, interchange, expansion) catches it
  and returns its last complete result: fewer steps taken, each one legal;
* any other pass lets it propagate, and the pipeline keeps that pass's input.

Either way the IR that goes on is valid and means the same as the input (every pass preserves
meaning, and each step is a pass's unit of legality), and the pipeline warns naming the pass.

Outside a scope :func:`check` does nothing, so a pass run alone (``transpile opt``, tests) has no
budget.  The scope is per thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

DEFAULT_PASS_SECONDS = 120.0
DEFAULT_TOTAL_SECONDS = 480.0
DEFAULT_MEMORY_MB = 4096.0
_RSS_EVERY = 0.1  # seconds between two reads of the resident memory


@dataclass(frozen=True)
class Budget:
    """The limits of one compilation's passes (defaults generous: the PolyBench kernels need well
    under a second a pass)."""

    pass_seconds: float = DEFAULT_PASS_SECONDS
    total_seconds: float = DEFAULT_TOTAL_SECONDS
    memory_mb: float = DEFAULT_MEMORY_MB


class BudgetExceeded(Exception):  # noqa: N818 (a signal, not an error: the pass stops, correct)
    """Raised by :func:`check` in a scope past its deadline or memory."""


@dataclass
class Scope:
    """One pass's run under a budget; ``stopped`` says why it stopped (``time`` or ``memory``), if it did."""

    name: str
    deadline: float
    memory_mb: float
    stopped: str | None = None
    next_rss: float = field(default=0.0)


_local = threading.local()


@contextmanager
def scope(name: str, seconds: float, memory_mb: float) -> Iterator[Scope]:
    """Run the block as pass ``name`` with ``seconds`` of time and ``memory_mb`` of resident memory."""
    s = Scope(name, time.monotonic() + seconds, memory_mb)
    outer = getattr(_local, "scope", None)
    _local.scope = s
    try:
        yield s
    finally:
        _local.scope = outer


@contextmanager
def unlimited() -> Iterator[None]:
    """Run the block with no budget (a pass that must complete, inside a budgeted one)."""
    outer = getattr(_local, "scope", None)
    _local.scope = None
    try:
        yield
    finally:
        _local.scope = outer


def check() -> None:
    """Raise :class:`BudgetExceeded` if the current scope is past its time or memory (else nothing)."""
    s: Scope | None = getattr(_local, "scope", None)
    if s is None:
        return
    if s.stopped is not None:
        raise BudgetExceeded(s.name)
    now = time.monotonic()
    if now > s.deadline:
        s.stopped = "time"
        raise BudgetExceeded(s.name)
    if now >= s.next_rss:
        s.next_rss = now + _RSS_EVERY
        if resident_mb() > s.memory_mb:
            s.stopped = "memory"
            raise BudgetExceeded(s.name)


def resident_mb() -> float:
    """This process's resident memory in MB (its peak where /proc is missing)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

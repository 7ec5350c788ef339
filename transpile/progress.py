"""A progress line on stderr for long compilations: the stage running, the kernel, the time so far.

A large generated input can take minutes; a silent compiler looks hung.  :func:`track` wraps the
compilation of one input: when stderr is a terminal and the work has run for :data:`DELAY`
seconds, a thread redraws one line in place (``transpile: big.c: kernel_f: pass fuse, 12 s``)
every :data:`EVERY` seconds until the work ends, then erases it.  Stages are reported by
:func:`stage` (the front end, each pass of :mod:`transpile.pipeline`, emission, verification);
outside :func:`track`, or when stderr is not a terminal, it does nothing, so logs and pipes get
no control characters.  :func:`clear` erases the line before other output (a warning) is printed.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO, TypeVar

T = TypeVar("T")

DELAY = 2.0
EVERY = 0.25


class _Line:
    def __init__(self, label: str, stream: TextIO) -> None:
        self.label = label
        self.stream = stream
        self.start = time.monotonic()
        self.what = "starting"
        self.shown = False
        self.lock = threading.Lock()
        self.done = threading.Event()

    def run(self) -> None:
        if self.done.wait(DELAY):
            return
        while not self.done.is_set():
            with self.lock:
                if not self.done.is_set():
                    text = f"transpile: {self.label}: {self.what}, {time.monotonic() - self.start:.0f} s"
                    self.stream.write("\r" + text + "\x1b[K")
                    self.stream.flush()
                    self.shown = True
            self.done.wait(EVERY)

    def erase(self) -> None:
        with self.lock:
            if self.shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self.shown = False


_current: _Line | None = None


@contextmanager
def track(label: str, stream: TextIO | None = None) -> Iterator[None]:
    """Show progress of the block on ``stream`` (default stderr) if it is a terminal (see the module)."""
    global _current
    out = sys.stderr if stream is None else stream
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty or _current is not None:
        yield
        return
    line = _Line(label, out)
    thread = threading.Thread(target=line.run, name="transpile-progress", daemon=True)
    _current = line
    thread.start()
    try:
        yield
    finally:
        line.done.set()
        thread.join()
        line.erase()
        _current = None


def tracked(label: str, action: Callable[[], T]) -> T:
    """``action()`` inside :func:`track` (the line is erased before an error reaches the caller)."""
    with track(label):
        return action()


def stage(what: str, kernel: str | None = None) -> None:
    """Say what the compilation is doing now (shown only inside :func:`track`)."""
    line = _current
    if line is not None:
        line.what = f"{kernel}: {what}" if kernel else what


def clear() -> None:
    """Erase the progress line (if shown) before printing something else on stderr; it comes back
    at the next redraw."""
    line = _current
    if line is not None:
        line.erase()

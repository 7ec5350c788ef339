"""Forking from a process with threads, and waits that must end (transpile/verify/proc.py and the
local backend of transpile/search/evaluate.py).

A fork copies only the forking thread: a lock another thread holds at that moment stays held for
ever in the child.  ``transpile verify --group --jobs 2`` hung this way (a child blocked on
tempfile's set-up lock, taken by a sibling pool thread, until the 600 s task timeout)."""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from transpile.search.evaluate import Task, run_tasks
from transpile.verify import proc
from transpile.verify.proc import fork_stream

HELP = "tests.evaluate_helpers"


def test_a_child_uses_tempfile_while_another_thread_holds_its_lock(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # The child's first mkstemp() takes tempfile._once_lock; another thread of the parent has it.
    monkeypatch.setattr(tempfile, "_name_sequence", None)
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with tempfile._once_lock:  # type: ignore[attr-defined]
            holding.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(10)

        def child(send: Any) -> bool:
            fd, name = tempfile.mkstemp(dir=tmp_path)
            os.close(fd)
            return os.path.exists(name)

        _, result, error = fork_stream(child, timeout=5, what="the child")
    finally:
        release.set()
        holder.join()
    assert error is None and result is True, error


def test_the_local_backend_forks_from_the_calling_thread_only() -> None:
    # No other thread of the evaluator runs while it forks, so none can hold a lock then.
    me = threading.get_ident()
    forks: list[tuple[int, int]] = []
    recording = [True]

    def before() -> None:
        if recording[0]:
            forks.append((threading.get_ident(), threading.active_count()))

    os.register_at_fork(before=before)  # cannot be unregistered: switched off below
    threads = threading.active_count()
    try:
        outs = []
        for o in run_tasks([Task(f"t{i}", f"{HELP}:double", {"x": i}) for i in range(4)], jobs=2, timeout=60):
            assert threading.active_count() == threads  # nothing of the evaluator runs beside us
            outs.append(o)
    finally:
        recording[0] = False
    assert sorted(o.value["x"] for o in outs) == [0, 2, 4, 6]
    assert len(forks) == 4 and all(f == (me, threads) for f in forks), forks


def test_a_child_that_closes_its_pipe_and_goes_on_is_timed_out() -> None:
    # EOF is not a death: the parent must not wait for the child's exit past the timeout.
    def child(send: Any) -> None:
        send.__self__.close()
        time.sleep(8)

    t0 = time.monotonic()
    _, _, error = fork_stream(child, timeout=1, group=True)
    assert error is not None and error.kind == "timeout", error
    assert time.monotonic() - t0 < 4


def test_a_child_that_reports_but_does_not_exit_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proc, "GRACE", 0.5, raising=False)

    def child(send: Any) -> None:
        send(("__done__", 42))  # what returning 42 sends; then it hangs instead of exiting
        time.sleep(8)

    t0 = time.monotonic()
    _, result, error = fork_stream(child, timeout=30)
    assert error is None and result == 42, error
    assert time.monotonic() - t0 < 4


def test_a_result_waiting_when_the_watcher_looks_late_is_not_a_timeout() -> None:
    # One thread watches every child of the evaluator: a caller busy between two looks must not turn
    # a child that finished in time into a timeout.
    child = proc.Forked(lambda send: (send("hello"), 42)[1], timeout=0.5)
    try:
        child.start()
        time.sleep(1.0)
        assert child.check()
    finally:
        child.close()
    assert (child.messages, child.result, child.error) == (["hello"], 42, None)


def test_a_starved_child_is_not_timed_out_but_a_spinning_one_is() -> None:
    """The wall-clock deadline of a child that has barely run (a loaded machine: CI's ``pytest -n``,
    parallel RL rewards) moves, up to ``WALL_CAP`` timeouts; one that used its CPU time is timed out
    as before; one that sleeps for ever ends at the cap.  Under ``-n auto`` a correct gemm failed
    stage (c) of tests/test_rewards.py and passed alone (2026-12-07; its message was not kept)."""
    def sleeper(send: Any) -> int:  # uses no CPU time: what a starved child looks like
        time.sleep(1.6)
        return 7

    _, result, error = fork_stream(sleeper, timeout=1)
    assert error is None and result == 7, error

    def spinner(send: Any) -> None:
        t = time.monotonic()
        while time.monotonic() - t < 20:
            pass

    t0 = time.monotonic()
    _, _, error = fork_stream(spinner, timeout=1)
    assert error is not None and error.kind == "timeout", error
    assert time.monotonic() - t0 < 1 / proc.STARVED + 2

    t0 = time.monotonic()
    _, _, error = fork_stream(lambda send: time.sleep(30), timeout=1)
    assert error is not None and error.kind == "timeout", error
    assert proc.WALL_CAP - 0.1 <= time.monotonic() - t0 < proc.WALL_CAP + 2

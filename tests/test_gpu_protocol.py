"""The parent's side of the GPU worker protocol (transpile/verify/gpu.py), against a stand-in worker (no GPU)."""

from __future__ import annotations

import sys
from pathlib import Path

from transpile.verify.gpu import Worker

FAKE = r'''
import sys, time
from transpile.verify.gpu_worker import Channel

args = sys.argv[1:]
chan = Channel(int(args[args.index("--fd-in") + 1]), int(args[args.index("--fd-out") + 1]))
req = chan.recv()
chan.send({"event": "timing-start", "ack": True})
try:
    answer = chan.recv(timeout=5.0)  # the real worker starts timing only after this
except TimeoutError:
    chan.send({"ok": False, "error": "the parent did not answer timing-start"})
    sys.exit(0)
started = time.monotonic()
time.sleep(0.05)  # the timed loop
ended = time.monotonic()  # before the event is sent: the parent may read it at once
chan.send({"event": "timing-end", "count": 1})
chan.send({"ok": True, "answer": answer, "loop_s": ended - started})
chan.recv()  # exit
'''


def test_the_timed_loop_starts_after_the_parent_has_read_its_clock(tmp_path: Path) -> None:
    # Stage (f)'s timer check compares the events' total with the parent's window between the
    # start and end events.  The worker waits for the parent's answer to the start event, so the
    # parent's window holds the whole loop even when it reads the event late (run 55: a parent under
    # load read it after the loop had run and saw 0.02 ms windows).
    fake = tmp_path / "fake_worker.py"
    fake.write_text(FAKE)
    w = Worker(prefix=(sys.executable, str(fake)))
    marks: dict[str, float] = {}
    try:
        reply = w.request({"op": "time"}, timeout=30, on_event=lambda ev, t: marks.__setitem__(ev["event"], t))
    finally:
        w.close()
    assert reply["answer"] == {"op": "go"}
    assert marks["timing-end"] - marks["timing-start"] >= reply["loop_s"]

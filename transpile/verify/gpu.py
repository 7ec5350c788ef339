"""Stages (d)-(f) on a GPU: small shapes, full size with several seeds, timing.

The candidate is built as a user builds it (``nvcc -O3 -arch=sm_90 -Xcompiler -fPIC -c``, nothing
of ours), linked with include/gpu_interpose.cpp by ``--wrap`` (every allocation it makes is
filled from the call's seed, except while timing), cached by content, and run by
:mod:`transpile.verify.gpu_worker` in a separately started, neutral interpreter (docs/verify.md,
"Running the candidate as a user does"); the reference and the judging stay here.

(d) small shapes, as stage (c) but on the device, every call in one process: runs A (first
    inputs), B (second inputs: ``fresh-input``), A2 (first again: ``determinism``, within
    the tolerance since atomics may reorder sums) and D (``NAME_device`` on a
    non-blocking stream, read back through that stream only: work left on
    another stream shows as ``device-entry``), then new inputs in the same buffers and
    NAME_device on new ones (:data:`DEVICE_RUNS`, ``repeated-call``), with poisoned outputs,
    host guard zones and read-only inputs checked; then ``compute-sanitizer`` memcheck and
    racecheck on one shape when the tool is installed.
(e) the requested size (or the largest power of two within budget), one input
    draw per seed; the reference runs before the candidate for even seeds and
    after it for odd ones.
(f) timing: ``NAME_device`` on K rotated input sets (independent full-size draws with their
    own references) resident on the device, warm-up, a device-wide synchronize
    before every measurement, CUDA events on a non-blocking stream, median.
    Checked: every call's outputs (sampled elements, the last calls whole: ``timing-output``,
    :func:`check_timed_calls`), events vs the worker's host clock (events cannot exceed it), the
    device going idle soon after the end event (``stream``: work outside the
    timed stream), the parent's wall clock around the whole loop (``timer``:
    a tampered timer; the worker starts the loop only after the parent has
    read its clock for it, so a parent that reads the start late, under load,
    still holds the loop in its window), and the roofline floor: bytes the kernel must move /
    4144 GB/s (measured H200 copy bandwidth); faster than that is flagged
    (``speed-floor``), not celebrated.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from transpile.verify.checks import compare, same_bits, tolerance
from transpile.verify.gpu_build import GpuLibrary, build_gpu_library
from transpile.verify.gpu_worker import Channel, find_cudart
from transpile.verify.prepare import (
    ACCEPT_AMPLIFICATION,
    MAX_AMPLIFICATION,
    Prepared,
    Skip,
    amplification,
    finite,
    prepare,
    rounding_spread,
    spread_widen,
)
from transpile.verify.report import FAIL, INCONCLUSIVE, PASS, SKIP, Report, Stage
from transpile.verify.simstage import judge_run, safe_output
from transpile.verify.synth import (
    RECIPES,
    Shape,
    default_full_sizes,
    make_inputs,
    seed_for,
    shapes,
    transfer_bytes,
)

COPY_BANDWIDTH = 4144e9
"""Bytes per second: the measured device-to-device copy bandwidth of an H200."""
GPU_WORK_BUDGET = {"quick": 2e5, "full": 5e7}


@dataclass(frozen=True)
class GpuInfo:
    """Whether stages (d)-(f) can run, and why not."""

    available: bool
    reason: str = ""
    name: str = ""
    backend: str = ""


@cache
def _detect() -> GpuInfo:
    import importlib.util

    if os.environ.get("TRANSPILE_VERIFY_GPU", "").strip() in ("0", "no", "off"):
        return GpuInfo(False, "GPU stages disabled (TRANSPILE_VERIFY_GPU=0)")
    if importlib.util.find_spec("cupy") is None and find_cudart() is None:
        return GpuInfo(False, "no GPU: cupy is not installed and libcudart was not found")
    try:
        proc = subprocess.run([sys.executable, "-m", "transpile.verify.gpu_worker", "--detect"],
                              capture_output=True, text=True, timeout=120)
        info = json.loads(proc.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return GpuInfo(False, "no GPU: the CUDA runtime did not answer")
    if not info.get("count"):
        return GpuInfo(False, f"no GPU ({info.get('error', 'no CUDA device')})")
    return GpuInfo(True, "", info.get("name", ""), info.get("backend", ""))


def detect(force: bool | None = None) -> GpuInfo:
    """The GPU, detected once per process (``force`` False disables the GPU stages)."""
    if force is False:
        return GpuInfo(False, "GPU stages disabled")
    return _detect()


WORKER_ENV_DROP = ("TRANSPILE_", "PYTEST_", "COV_CORE_")
"""Environment variables the worker does not inherit (by prefix): the project's and the test runner's."""


def worker_env(home: Path) -> dict[str, str]:
    """The worker's environment: the verifier's, less :data:`WORKER_ENV_DROP`, the shell's ``_`` (the
    command that started the verifier) and the ``PYTHONPATH`` entries that hold this project (the
    worker imports none of it); ``PWD`` is the worker's directory.  Every worker of a run gets the
    same, so nothing in it tells a checking call from a timed one."""
    import transpile

    ours = Path(transpile.__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith(WORKER_ENV_DROP) and k not in ("_", "OLDPWD")}
    if "PYTHONPATH" in env:
        keep = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and Path(p).resolve() != ours]
        if keep:
            env["PYTHONPATH"] = os.pathsep.join(keep)
        else:
            del env["PYTHONPATH"]
    env["PWD"] = str(home)
    return env


class WorkerError(Exception):
    """The worker died, hung, or refused a request."""

    def __init__(self, kind: str, message: str, output: str = "") -> None:
        super().__init__(message)
        self.kind, self.message, self.output = kind, message, output


RUNTIME = ""
"""The runtime the workers use ("" the GPU's; "host" the tests' stand-in, gpu_worker.HostRuntime)."""


class Worker:
    """The parent's handle on a gpu_worker process.

    Started as ``<python> -`` (the interpreter by its path) with gpu_worker's text on stdin (its process and command line name
    nothing of the project), in a fresh directory that holds its own copy of the library, with
    :func:`worker_env`; then it leaves the verifier's process tree (``orphan``) unless a tool
    (``prefix``, e.g. compute-sanitizer) must follow it.  ``command`` replaces the whole start
    (tests)."""

    def __init__(self, prefix: tuple[str, ...] = (), *, command: list[str] | None = None,
                 lib: GpuLibrary | None = None) -> None:
        from transpile.verify import gpu_worker

        r1, w1 = os.pipe()  # parent -> worker
        r2, w2 = os.pipe()  # worker -> parent
        self.log = tempfile.TemporaryFile()
        self.home = Path(tempfile.mkdtemp())
        self.lib_path: Path | None = None
        if lib is not None:
            stem = re.sub(r"[^A-Za-z0-9_]", "_", lib.path.stem.rsplit("-", 1)[0].removeprefix("lib")) or "k"
            self.lib_path = self.home / f"lib{stem}.so"
            shutil.copyfile(lib.path, self.lib_path)
        orphan = not prefix and command is None
        # The interpreter by its full path: CPython finds its own prefix (and numpy) from argv[0].
        argv = command or [*prefix, sys.executable, "-"]
        self.proc = subprocess.Popen(argv, pass_fds=(r1, w2), stdin=subprocess.PIPE, stdout=self.log,
                                     stderr=self.log, cwd=self.home, env=worker_env(self.home) if command is None else None)
        os.close(r1)
        os.close(w2)
        self.chan = Channel(r2, w1)
        self._fds = (r2, w1)
        self.pid = self.proc.pid
        self.pidfd: int | None = None
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(gpu_worker.source(r1, w2, orphan).encode())
            self.proc.stdin.close()
            hello = self.chan.recv(timeout=120)
        except (OSError, EOFError, TimeoutError) as e:
            self.close(kill=True)
            raise WorkerError("crash", f"the GPU worker did not start ({type(e).__name__})", self.output()) from None
        pid = int(hello.get("pid") or 0) if isinstance(hello, dict) else 0
        self.pid = pid if pid > 1 else self.proc.pid  # never 0 or 1: os.kill would signal a group or init
        if self.pid != self.proc.pid:
            try:
                self.pidfd = os.pidfd_open(self.pid)
            except (OSError, AttributeError):
                self.pidfd = None

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def alive(self) -> bool:
        if self.pid == self.proc.pid:
            return self.proc.poll() is None
        if self.pidfd is not None:
            return not select.select([self.pidfd], [], [], 0)[0]
        try:
            os.kill(self.pid, 0)
        except OSError:
            return False
        return True

    def _kill(self) -> None:
        if self.pid == self.proc.pid:
            if self.proc.poll() is None:
                self.proc.kill()
            return
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            elif self.pid > 1 and self.alive():
                os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass

    def _wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the worker (and the process started for it) to end."""
        deadline = time.monotonic() + timeout
        if self.pid != self.proc.pid:
            while self.alive() and time.monotonic() < deadline:
                if self.pidfd is not None:
                    select.select([self.pidfd], [], [], max(0.0, deadline - time.monotonic()))
                else:
                    time.sleep(0.05)
            if self.alive():
                return False
        try:  # the first child (exits at once), or the tool that ran the worker (writes its report first)
            self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return False
        return True

    def _died(self) -> str:
        """How the worker ended: its exit status, or the signal faulthandler named in its log."""
        if self.pid == self.proc.pid:
            return f"exit status {self.proc.wait()}"
        self._wait(5.0)
        m = re.search(r"Fatal Python error: (\w[\w ]*)", self.output())
        return m.group(1).strip() if m else "its process ended"

    def request(self, req: dict[str, Any], *, timeout: float, on_event: Any = None) -> dict[str, Any]:
        """Send ``req`` and wait for the reply (events before it go to ``on_event``)."""
        if req.get("op") == "load" and self.lib_path is not None:
            req = {**req, "lib": str(self.lib_path)}
        if RUNTIME and req.get("op") == "load":
            req = {**req, "runtime": RUNTIME}
        try:
            self.chan.send(req)
            deadline = time.monotonic() + timeout
            while True:
                reply = self.chan.recv(timeout=max(0.0, deadline - time.monotonic()))
                if "event" in reply and "ok" not in reply:
                    if on_event is not None:
                        on_event(reply, time.perf_counter())
                    if reply.get("ack"):  # the worker waits for this before it goes on (timing-start)
                        self.chan.send({"op": "go"})
                    continue
                break
        except TimeoutError:
            self.close(kill=True)
            raise WorkerError("timeout", f"the GPU worker did not answer within {timeout:g} s",
                              self.output()) from None
        except (EOFError, BrokenPipeError):
            how = self._died()
            raise WorkerError("crash", f"the candidate died on the GPU ({how})", self.output()) from None
        if not reply.get("ok"):
            raise WorkerError("error", reply.get("error", "request failed"), self.output())
        return reply

    def close(self, kill: bool = False, wait: float = 30.0) -> None:
        if not kill and self.alive():
            try:
                self.chan.send({"op": "exit"})
                self._wait(wait)
            except OSError:
                pass
        if self.alive():
            self._kill()
            self._wait(10.0)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for fd in (*self._fds, *([self.pidfd] if self.pidfd is not None else [])):
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds, self.pidfd = (), None
        self.log.close()
        shutil.rmtree(self.home, ignore_errors=True)


def _params(report_sig: Any) -> list[tuple[str, str, bool, str]]:
    return [(a.name, a.ty.name, a.is_array, "ret" if a.name == report_sig.ret else a.intent) for a in report_sig.args]


def _worker_result(res: dict[str, Any]) -> dict[str, Any]:
    """The worker's reply in the form :func:`simstage.judge_run` takes."""
    out = dict(res)
    if res.get("error"):
        out["last_error"], out["diagnostics"] = -1, res["error"]
    return out


def run_stage(key: str, stage: Stage, report: Report, target: Any, opts: Any) -> None:
    """Run GPU stage ``key`` (``d``, ``e`` or ``f``)."""
    t0 = time.perf_counter()
    lib, output = build_gpu_library(target.cu)
    if lib is None:
        stage.status, stage.check = FAIL, "compile"
        errors = [ln.strip() for ln in output.splitlines() if "error" in ln]
        stage.message = "nvcc -shared: " + (errors[0] if errors else output.strip()[-300:])
        return
    if lib.fill_offset is None:
        report.note("stage (d)-(f): the allocation fill could not be located in the library; fresh memory "
                    "is not filled")
    run_built(key, stage, report, target, opts, lib)
    stage.seconds = time.perf_counter() - t0


def run_built(key: str, stage: Stage, report: Report, target: Any, opts: Any, lib: GpuLibrary) -> None:
    """Stage ``key`` on an already built library (the tests pass a gcc-built one)."""
    try:
        {"d": _stage_d, "e": _stage_e, "f": _stage_f}[key](stage, report, target, opts, lib)
    except WorkerError as e:
        stage.status, stage.check = FAIL, e.kind if e.kind in ("crash", "timeout") else "cuda-error"
        out = safe_output(e.output)
        stage.message = f"{e.message}{': ' + out if out else ''}"
        stage.details["output"] = e.output[-2000:]


def _load(target: Any, lib: GpuLibrary, prefix: tuple[str, ...] = ()) -> tuple[Worker, bool]:
    w = Worker(prefix, lib=lib)
    try:
        reply = w.request({"op": "load", "lib": str(lib.path), "params": _params(target.sig),
                           "name": target.sig.name, "device": True, "fill_offset": lib.fill_offset}, timeout=120)
    except WorkerError:
        w.close(kill=True)
        raise
    return w, bool(reply.get("device"))


def _fill_seed(seed: int, *parts: int) -> int:
    return int(seed_for(seed, 77, *parts).integers(1, 2**63))


DEVICE_RUNS = (
    # label, input set (1 or 2), NAME_device?, on the buffers of the previous call of its kind?
    ("A", 1, False, False),
    ("B", 2, False, False),
    ("A2", 1, False, False),
    ("B-same", 2, False, True),
    ("D", 1, True, False),
    ("D-same", 2, True, True),
    ("D-same2", 1, True, True),
    ("D-new", 2, True, False),
)
"""Stage (d)'s calls per shape, all in one worker process (so every shape's calls follow the
previous shape's): A, B, A2 and D as in stage (c); then fresh inputs written into the buffers of
the call before (the drop-in's host arrays, NAME_device's device buffers: a result kept by address
and replayed fails), and NAME_device on new buffers again."""

_WHAT = {"B-same": "the drop-in called again with the second inputs written into the same host arrays",
         "D-same": "{name}_device called again with the second inputs in the same device buffers",
         "D-same2": "{name}_device called a third time with the first inputs back in the same device buffers",
         "D-new": "{name}_device called with the second inputs in new device buffers"}


def _judge(label: str, res: dict[str, Any], target: Any, prep: Prepared, report: Report, where: str,
           base: dict[str, np.ndarray] | None = None, *, second: bool = False,
           call: int = 0) -> tuple[str, str] | None:
    """The failed check and message of one stage (d) call, or None."""
    sig = target.sig
    x = prep.x2 if second else prep.x1
    ref = prep.ref2 if second else prep.ref1
    if label in _WHAT:  # a later call: judged as a first call on its set, with that set's tolerance
        p = dataclasses.replace(prep, widen=max(prep.widen, prep.widen2)) if second else prep
        failed = judge_run("D" if label.startswith("D") else "A", _worker_result(res), sig, p, x, ref, report,
                           where=where)
        if failed is None:
            return None
        what = _WHAT[label].format(name=sig.name)
        return "repeated-call", f"{where}call {call} of this shape ({what}): [{failed[0]}] {failed[1][len(where):]}"
    failed = judge_run(label if label != "A2" else "A", _worker_result(res), sig, prep, x, ref, report,
                       where=where)
    if failed or base is None:
        return failed
    for a in sig.outputs:  # determinism up to reduction reordering
        cmp = compare(a.name, res["arrays"][a.name], base[a.name], x[a.name], prep.tol(a.dtype))
        if not cmp.ok:
            return "determinism", f"{where}two calls on the same inputs disagree: {cmp.message()}"
    return None


def _stage_d(stage: Stage, report: Report, target: Any, opts: Any, lib: GpuLibrary) -> None:
    sig, kernel = target.sig, target.kernel
    worker, device = _load(target, lib)
    tested: list[Prepared] = []
    calls = 0
    try:
        from transpile.verify.simstage import INTERP_WORK_BUDGET

        budget = (INTERP_WORK_BUDGET if target.reference.kind == "interp" else GPU_WORK_BUDGET)[opts.mode]
        todo = shapes(sig, kernel, mode=opts.mode, requested=None, work_budget=budget, byte_budget=2e8)
        for index, shape in enumerate(todo):
            try:
                prep = prepare(target.reference, sig, kernel, shape, seed=report.seed, index=100 + index)
            except Skip as e:
                report.note(f"stage (d): shape {shape} skipped: {e}")
                continue
            for n in prep.notes:
                report.note(n)
            report.shapes.append({"stage": "d", "shape": shape.label, "sizes": dict(shape.scalars),
                                  "recipe": prep.recipe, "distributions": [prep.dist1, prep.dist2],
                                  "depth": round(prep.depth, 1), "ghost": prep.ghost, "degenerate": prep.degenerate})
            where = f"at {shape}: "
            results: dict[str, dict[str, Any]] = {}
            for j, (label, which, dev, same) in enumerate(DEVICE_RUNS):
                if dev and not device:
                    continue
                x = prep.x2 if which == 2 else prep.x1
                results[label] = worker.request(
                    {"op": "run", "inputs": x, "device": dev, "pattern": index, "same_buffers": same,
                     "fill_seed": _fill_seed(report.seed, index, j)}, timeout=opts.sim_timeout)
                calls += 1
                base = results["A"]["arrays"] if label == "A2" else None
                failed = _judge(label, results[label], target, prep, report, where, base, second=which == 2,
                                call=j + 1)
                if failed:
                    stage.status, (stage.check, stage.message) = FAIL, failed
                    return
            tested.append(prep)
    finally:
        worker.close()
    if not tested:
        stage.status, stage.check, stage.message = INCONCLUSIVE, "inputs", "no shape could be tested"
        return
    if opts.sanitizer and shutil.which("compute-sanitizer"):
        for tool in ("memcheck", "racecheck"):
            problem, summary = _sanitize(tool, target, lib, tested[0])
            stage.details.setdefault("sanitizer", {})[tool] = summary
            if problem:
                stage.status, stage.check, stage.message = FAIL, tool, problem
                return
            if summary.startswith("no summary"):
                report.note(f"stage (d): compute-sanitizer {tool} did not run to the end ({summary})")
    elif opts.sanitizer:
        report.note("stage (d): compute-sanitizer not found; memcheck/racecheck skipped")
    stage.status = PASS
    stage.message = f"{len(tested)} shape(s), {calls} checked calls in one process on {detect().name or 'the GPU'}"


def _sanitize(tool: str, target: Any, lib: GpuLibrary, prep: Prepared) -> tuple[str, str]:
    """(the problem compute-sanitizer's ``tool`` finds in one drop-in call or '', its summary)."""
    failure = ""
    with tempfile.TemporaryDirectory() as d:
        log = Path(d) / "log.txt"
        prefix = ("compute-sanitizer", "--tool", tool, "--log-file", str(log))
        try:
            w, _ = _load(target, lib, prefix)
            try:
                w.request({"op": "run", "inputs": prep.x1, "device": False}, timeout=600)
            finally:
                w.close(wait=600)  # the tool writes its report when the process ends
        except WorkerError as e:
            failure = e.message
        text = log.read_text(errors="replace") if log.exists() else ""
    m = re.search(r"ERROR SUMMARY: (\d+) error", text) or \
        re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?", text)
    if m is None:
        return "", f"no summary ({failure or 'no log'})"
    if int(m.group(1)):
        first = next((ln.strip("= ").strip() for ln in text.splitlines()
                      if re.search(r"Invalid|Race|Hazard|error", ln) and "ERROR SUMMARY" not in ln), "")
        return f"compute-sanitizer {tool}: {m.group(1)} error(s) at {prep.shape}: {first}", m.group(0)
    return "", m.group(0)


def full_sizes(target: Any, opts: Any, report: Report | None = None) -> dict[str, int]:
    """The full size: the requested sizes, completed by the default for the others.

    With the (slow) IR interpreter as the reference, the size stays where it can finish."""
    if target.reference.kind == "interp":
        default = default_full_sizes(target.sig, target.kernel, work_budget=3e5, byte_budget=1e8)
        if opts.sizes and report is not None:
            report.note("the reference is the IR interpreter: the full-size stages run at "
                        f"{default} instead of the requested sizes")
        return default
    # The compile-time check (quick) keeps the full size modest: it runs on every compile.
    budget = 2e7 if opts.mode == "quick" else 1e9
    default = default_full_sizes(target.sig, target.kernel, work_budget=budget, byte_budget=budget)
    return {**default, **{k: v for k, v in opts.sizes.items() if k in default}}


def _preferred_recipes(report: Report) -> list[str]:
    used = [s["recipe"] for s in report.shapes if s.get("recipe")]
    first = max(set(used), key=used.count) if used else "random"
    return [first, *[r for r in RECIPES if r != first]]


@dataclass
class FullDraw:
    """One input set at full size with its reference outputs and the widening its conditioning needs."""

    recipe: str
    x: Any
    r: dict[str, np.ndarray]
    spread: float
    widen: float
    amplification: float


def full_draw(ref: Any, sig: Any, shape: Shape, depth: float, seed: int, key: int, recipes: list[str],
              dist: str) -> FullDraw | list[str]:
    """As :func:`prepare` does for the small shapes: the first recipe (in ``recipes``' order) whose
    reference is finite and well conditioned (input amplification within ACCEPT_AMPLIFICATION, the
    FMA-contracted reference within the plain tolerance); else the least ill-conditioned one, with
    the tolerance widened.  The reasons every recipe failed if none is usable."""
    drawn: FullDraw | None = None
    why = []
    for ri, recipe in enumerate(recipes):
        x = make_inputs(sig, shape, seed_for(seed, key, ri), dist, recipe)
        if x is None:
            continue
        r = ref.run(x, timeout=1800)
        if not finite(sig, x, r):
            why.append(f"'{recipe}': the reference is not finite")
            continue
        amp = amplification(ref, sig, x, r, seed_for(seed, key + 100, ri), timeout=1800)
        if amp > MAX_AMPLIFICATION:
            why.append(f"'{recipe}': ill-conditioned (amplification {amp:.1e})")
            continue
        spread = rounding_spread(ref, sig, x, r, timeout=1800)
        try:
            widen = max(1.0, amp / ACCEPT_AMPLIFICATION, spread_widen(sig, depth, spread))
        except Skip as e:
            why.append(f"'{recipe}': {e}")
            continue
        if drawn is None or widen < drawn.widen:
            drawn = FullDraw(recipe, x, r, spread, widen, amp)
        if widen <= 1.0:
            break
    return drawn if drawn is not None else why


def _stage_e(stage: Stage, report: Report, target: Any, opts: Any, lib: GpuLibrary) -> None:
    sig, kernel, ref = target.sig, target.kernel, target.reference
    sizes = full_sizes(target, opts, report)
    shape = Shape("full", {**sizes, **{n: 2 for n in sig.other_ints}})
    recipes = _preferred_recipes(report)
    worker, _ = _load(target, lib)
    passed = 0
    try:
        from transpile.verify.signature import reduction_depth

        depth = reduction_depth(sig, kernel, shape.scalars)
        for s in range(opts.full_seeds):
            drawn = full_draw(ref, sig, shape, depth, report.seed, 500 + s, recipes, ["signed", "uniform"][s % 2])
            if isinstance(drawn, list):
                report.note(f"stage (e): seed {s}: no input recipe gives a usable reference at full size "
                            f"({'; '.join(drawn)}); draw skipped")
                continue
            x, r = drawn.x, drawn.r
            res = worker.request({"op": "run", "inputs": x, "device": False,
                                  "fill_seed": _fill_seed(report.seed, 500 + s)}, timeout=600)
            if s % 2:  # odd draws: the reference again, after the candidate (state shared through files, ...)
                r2 = ref.run(x, timeout=1800)
                if any(not same_bits(r2[a.name], r[a.name]).all() for a in sig.outputs):
                    report.note(f"stage (e): seed {s}: the reference is not deterministic")
                r = r2
            if drawn.widen > 1:
                report.note(f"stage (e): seed {s}: tolerance widened {drawn.widen:.1e}x (amplification "
                            f"{drawn.amplification:.1e}, rounding spread {drawn.spread:.1e}, recipe '{drawn.recipe}')")
            prep = Prepared(shape, drawn.recipe, "signed", "signed", x, x, r, r, depth, 1.0, drawn.widen, False,
                            False, spread=drawn.spread)
            failed = judge_run("A", _worker_result(res), sig, prep, x, r, report,
                               where=f"at full size ({shape}), seed {s}: ")
            if failed:
                stage.status, (stage.check, stage.message) = FAIL, failed
                return
            passed += 1
            report.timing.setdefault("reference_ms", []).append(ref.seconds[-1] * 1e3)
            report.timing.setdefault("dropin_first_call_ms", []).append(res.get("seconds", 0) * 1e3)
            if res.get("seconds", 0) > 60 and s + 1 < opts.full_seeds:
                report.note(f"stage (e): one call takes {res['seconds']:.0f} s at full size; "
                            f"stopped after {passed} seed(s)")
                break
    finally:
        worker.close()
    report.shapes.append({"stage": "e", "shape": "full", "sizes": dict(shape.scalars), "seeds": opts.full_seeds})
    if not passed:
        stage.status, stage.check, stage.message = INCONCLUSIVE, "inputs", ("no full-size draw had a finite, well-conditioned reference "
                                                                   "(see the notes)")
        return
    stage.status, stage.message = PASS, f"{passed} seed(s) at {shape}"


def check_timed_calls(sig: Any, res: dict[str, Any], draws: list[FullDraw], depth: float,
                      name: str) -> str | None:
    """Stage (f)'s output check: every call's sampled elements and the last timed call's and the
    last drop-in call's whole outputs against the reference of the call's input set; the message
    of the first wrong one, or None."""
    calls = res.get("calls") or []
    total = len(calls)

    def tol(a: Any, k: int) -> float:
        return tolerance(a.dtype, depth, draws[k].widen)

    def what(i: int) -> str:
        c = calls[i]
        kind = "drop-in" if c.get("dropin") else f"{name}_device"
        timed = "timed" if c.get("timed") else "warm-up"
        return f"{timed} {kind} call {i + 1} of {total} (input set {c['set'] + 1} of {len(draws)})"

    for i, c in enumerate(calls):
        k = c["set"]
        for a in sig.outputs:
            if a.name not in c["samples"]:
                continue
            idx, vals = c["samples"][a.name]
            ref = draws[k].r[a.name]
            cand = ref.copy()
            cand.reshape(-1)[np.asarray(idx, dtype=np.int64)] = vals
            cmp = compare(a.name, cand, ref, draws[k].x[a.name], tol(a, k))
            if not cmp.ok:
                err = "" if cmp.tol == 0 else f" (max error {cmp.max_err:.2e}, tolerance {cmp.tol:.1e})"
                return f"{what(i)}: {a.name}: {cmp.bad} of {len(idx)} sampled elements wrong ({cmp.kind}){err}"
    for key in ("last", "last_dropin"):
        last = res.get(key)
        if not last:
            continue
        k = last["set"]
        for a in sig.outputs:
            cmp = compare(a.name, last["arrays"][a.name], draws[k].r[a.name], draws[k].x[a.name], tol(a, k))
            if not cmp.ok:
                return f"{what(last['call'])}, whole output: {cmp.message()}"
    return None


def _timing_draws(report: Report, target: Any, shape: Shape, depth: float, first_bytes: int
                  ) -> tuple[list[FullDraw], list[str]]:
    """The rotated input sets of stage (f): independent draws at full size (as stage (e)'s), as many as
    fill 120 MB (2 to 8), each with its reference outputs and tolerance."""
    sets = int(max(2, min(8, math.ceil(2 * 60e6 / max(first_bytes, 1)), 2e9 // max(first_bytes, 1))))
    if target.reference.kind == "interp":  # each draw runs the (slow) interpreter three times
        sets = 2
    draws: list[FullDraw] = []
    why: list[str] = []
    recipes = _preferred_recipes(report)
    for k in range(sets):
        d = full_draw(target.reference, target.sig, shape, depth, report.seed, 900 + 10 * k, recipes, "signed")
        if isinstance(d, list):
            why = d
            continue
        draws.append(d)
        recipes = [d.recipe, *[r for r in recipes if r != d.recipe]]
    return draws, why


def _stage_f(stage: Stage, report: Report, target: Any, opts: Any, lib: GpuLibrary) -> None:
    from transpile.verify.signature import reduction_depth

    sig = target.sig
    sizes = full_sizes(target, opts)
    shape = Shape("full", {**sizes, **{n: 2 for n in sig.other_ints}})
    depth = reduction_depth(sig, target.kernel, shape.scalars)
    probe = make_inputs(sig, shape, seed_for(report.seed, 900), "signed", "random")
    set_bytes = sum(v.nbytes for v in (probe or {}).values() if isinstance(v, np.ndarray))
    draws, why = _timing_draws(report, target, shape, depth, set_bytes)
    if not draws:
        stage.status, stage.check = INCONCLUSIVE, "inputs"
        stage.message = f"no full-size input set has a usable reference ({'; '.join(why)})"
        return
    marks: dict[str, float] = {}
    first = max(report.timing.get("dropin_first_call_ms") or [0.0]) / 1e3  # seconds, from stage (e)
    slow = first > 2.0
    worker, device = _load(target, lib)
    try:
        res = worker.request({"op": "time", "sets": [d.x for d in draws], "device": device,
                              "outputs": [a.name for a in sig.outputs], "samples": 64,
                              "sample_seed": _fill_seed(report.seed, 900),
                              "warmup": 1 if slow else 3, "iters": 3 if slow else 30,
                              "max_seconds": 10.0, "dropin_iters": 1 if slow else 3},
                             timeout=max(600.0, 20 * first),
                             on_event=lambda ev, t: marks.__setitem__(ev["event"], t))
    finally:
        worker.close()
    floor_ms = transfer_bytes(sig, shape.scalars) / COPY_BANDWIDTH * 1e3
    ref_ms = statistics.median(report.timing.get("reference_ms") or [float("nan")])
    t = report.timing
    t.update(sizes=dict(shape.scalars), rotated_sets=len(draws), floor_ms=floor_ms,
             checked_calls=len(res.get("calls") or []),
             dropin_ms=statistics.median(res["dropin_ms"]) if res["dropin_ms"] else None)
    if res["errors"]:
        stage.status, stage.check = FAIL, "cuda-error"
        stage.message = f"{sig.name}_device returned error {res['errors'][0]} while timed"
        return
    wrong = check_timed_calls(sig, res, draws, depth, sig.name)
    if wrong:
        stage.status, stage.check, stage.message = FAIL, "timing-output", wrong
        return
    if device and res["event_ms"]:
        ev, host, sync = res["event_ms"], res["host_ms"], res["sync_ms"]
        med = statistics.median(ev)
        t.update(median_ms=med, method=f"CUDA events on {sig.name}_device, median of {len(ev)}",
                 host_median_ms=statistics.median(host), sync_median_ms=statistics.median(sync), samples=len(ev))
        if any(e > h + 0.05 for e, h in zip(ev, host)):
            stage.status, stage.check = FAIL, "timer"
            stage.message = "the CUDA events measured more time than passed on the host clock"
            return
        lag = statistics.median(s - h for s, h in zip(sync, host))
        if lag > max(0.5, med):
            stage.status, stage.check = FAIL, "stream"
            stage.message = (f"the device stayed busy {lag:.3f} ms after the timed stream's end event "
                             f"(the events saw {med:.3f} ms): work outside the stream passed in")
            return
        wall = (marks.get("timing-end", 0.0) - marks.get("timing-start", 0.0)) * 1e3
        if marks and sum(ev) > wall * 1.05 + 1.0:
            stage.status, stage.check = FAIL, "timer"
            stage.message = f"the worker claims {sum(ev):.3f} ms of kernel time in a {wall:.3f} ms wall-clock window"
            return
    elif t.get("dropin_ms") is not None:
        med = float(t["dropin_ms"])
        t.update(median_ms=med, method=f"host clock around the drop-in {sig.name} (no {sig.name}_device: "
                                        "copies included)")
    else:
        stage.status, stage.message = SKIP, "nothing to time"
        return
    if ref_ms == ref_ms:
        t["speedup"] = ref_ms / med if med > 0 else None
    if med < floor_ms:
        stage.status, stage.check = FAIL, "speed-floor"
        stage.message = (f"median {med:.4f} ms is below the roofline floor {floor_ms:.4f} ms "
                         f"({transfer_bytes(sig, shape.scalars) / 1e6:.1f} MB at 4144 GB/s): the kernel cannot "
                         "have done its work")
        return
    stage.status = PASS
    stage.message = (f"median {med:.4f} ms at {shape}, {t['checked_calls']} calls checked (floor {floor_ms:.4f} ms"
                     + (f", {t['speedup']:.1f}x the gcc reference" if t.get("speedup") else "") + ")")

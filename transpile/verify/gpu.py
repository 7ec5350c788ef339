"""Stages (d)-(f) on a GPU: small shapes, full size with several seeds, timing.

The candidate is built with ``nvcc -arch=sm_90 -Xcompiler -fPIC -shared``
and ``-include include/gpu_poison.h`` (every cudaMalloc it makes returns
memory filled with 0xFF bytes, except while timing), cached by content, and run by :mod:`transpile.verify.gpu_worker` in a
separately started interpreter; the reference and the judging stay here.

(d) small shapes, as stage (c) but on the device: runs A (first inputs), B
    (second inputs: ``fresh-input``), A2 (first again: ``determinism``, within
    the tolerance since atomics may reorder sums) and D (``NAME_device`` on a
    non-blocking stream, read back through that stream only: work left on
    another stream shows as ``device-entry``), with poisoned outputs, host guard
    zones and read-only inputs checked; then ``compute-sanitizer`` memcheck and
    racecheck on one shape when the tool is installed.
(e) the requested size (or the largest power of two within budget), one input
    draw per seed; the reference runs before the candidate for even seeds and
    after it for odd ones.
(f) timing: ``NAME_device`` on K rotated input sets (float inputs scaled by
    1 + k/1024) resident on the device, warm-up, a device-wide synchronize
    before every measurement, CUDA events on a non-blocking stream, median.
    Checked: events vs the worker's host clock (events cannot exceed it), the
    device going idle soon after the end event (``stream``: work outside the
    timed stream), the parent's wall clock around the whole loop (``timer``:
    a tampered timer; the worker starts the loop only after the parent has
    read its clock for it, so a parent that reads the start late, under load,
    still holds the loop in its window), and the roofline floor: bytes the kernel must move /
    4144 GB/s (measured H200 copy bandwidth); faster than that is flagged
    (``speed-floor``), not celebrated.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
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

from transpile.verify.checks import compare, same_bits
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
from transpile.verify.reference import cache_dir
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


def build_gpu_library(cu: Path) -> tuple[Path | None, str]:
    """``nvcc -arch=sm_90 -Xcompiler -fPIC -shared`` of ``cu`` (cached); (library, nvcc output)."""
    from transpile.verify.stages import nvcc

    exe = nvcc()
    if exe is None:
        return None, "nvcc not found"
    poison = Path(__file__).resolve().parent / "include" / "gpu_poison.h"
    key = hashlib.sha256(cu.read_bytes() + exe.encode() + str(cu.parent.resolve()).encode()
                         + poison.read_bytes()).hexdigest()[:20]
    lib = cache_dir("gpu") / f"lib{cu.stem}-{key}.so"
    if lib.exists():
        return lib, ""
    tmp = lib.with_name(f"{lib.name}.{os.getpid()}.tmp")
    proc = subprocess.run([exe, "-arch=sm_90", "-O3", "-Xcompiler", "-fPIC", "-shared",
                           "-include", str(poison), "-o", str(tmp), str(cu)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        return None, proc.stdout + proc.stderr
    os.replace(tmp, lib)
    return lib, proc.stdout + proc.stderr


class WorkerError(Exception):
    """The worker died, hung, or refused a request."""

    def __init__(self, kind: str, message: str, output: str = "") -> None:
        super().__init__(message)
        self.kind, self.message, self.output = kind, message, output


class Worker:
    """The parent's handle on a gpu_worker process."""

    def __init__(self, prefix: tuple[str, ...] = ()) -> None:
        r1, w1 = os.pipe()  # parent -> worker
        r2, w2 = os.pipe()  # worker -> parent
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([*prefix, sys.executable, "-m", "transpile.verify.gpu_worker",
                                      "--fd-in", str(r1), "--fd-out", str(w2)],
                                     pass_fds=(r1, w2), stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        os.close(r1)
        os.close(w2)
        self.chan = Channel(r2, w1)
        self._fds = (r2, w1)

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def request(self, req: dict[str, Any], *, timeout: float, on_event: Any = None) -> dict[str, Any]:
        """Send ``req`` and wait for the reply (events before it go to ``on_event``)."""
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
            code = self.proc.wait()
            raise WorkerError("crash", f"the candidate died on the GPU (exit status {code})", self.output()) from None
        if not reply.get("ok"):
            raise WorkerError("error", reply.get("error", "request failed"), self.output())
        return reply

    def close(self, kill: bool = False, wait: float = 30.0) -> None:
        if self.proc.poll() is None:
            if not kill:
                try:
                    self.chan.send({"op": "exit"})
                    self.proc.wait(timeout=wait)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        for fd in self._fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.log.close()


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
    try:
        {"d": _stage_d, "e": _stage_e, "f": _stage_f}[key](stage, report, target, opts, lib)
    except WorkerError as e:
        stage.status, stage.check = FAIL, e.kind if e.kind in ("crash", "timeout") else "cuda-error"
        out = safe_output(e.output)
        stage.message = f"{e.message}{': ' + out if out else ''}"
        stage.details["output"] = e.output[-2000:]
    stage.seconds = time.perf_counter() - t0


def _load(target: Any, lib: Path, prefix: tuple[str, ...] = ()) -> tuple[Worker, bool]:
    w = Worker(prefix)
    reply = w.request({"op": "load", "lib": str(lib), "params": _params(target.sig), "name": target.sig.name,
                       "device": True}, timeout=120)
    return w, bool(reply.get("device"))


def _judge(label: str, res: dict[str, Any], target: Any, prep: Prepared, report: Report, where: str,
           base: dict[str, np.ndarray] | None = None) -> tuple[str, str] | None:
    sig = target.sig
    x = prep.x2 if label == "B" else prep.x1
    ref = prep.ref2 if label == "B" else prep.ref1
    failed = judge_run(label if label != "A2" else "A", _worker_result(res), sig, prep, x, ref, report,
                       where=where)
    if failed or base is None:
        return failed
    for a in sig.outputs:  # determinism up to reduction reordering
        cmp = compare(a.name, res["arrays"][a.name], base[a.name], x[a.name], prep.tol(a.dtype))
        if not cmp.ok:
            return "determinism", f"{where}two calls on the same inputs disagree: {cmp.message()}"
    return None


def _stage_d(stage: Stage, report: Report, target: Any, opts: Any, lib: Path) -> None:
    sig, kernel = target.sig, target.kernel
    worker, device = _load(target, lib)
    tested: list[Prepared] = []
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
            runs = [("A", prep.x1, False), ("B", prep.x2, False), ("A2", prep.x1, False)]
            if device:
                runs.append(("D", prep.x1, True))
            results: dict[str, dict[str, Any]] = {}
            for label, x, dev in runs:
                results[label] = worker.request({"op": "run", "inputs": x, "device": dev, "pattern": index},
                                                timeout=opts.sim_timeout)
                base = results["A"]["arrays"] if label == "A2" else None
                failed = _judge(label, results[label], target, prep, report, where, base)
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
    stage.message = f"{len(tested)} shape(s) on {detect().name or 'the GPU'}"


def _sanitize(tool: str, target: Any, lib: Path, prep: Prepared) -> tuple[str, str]:
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


def _stage_e(stage: Stage, report: Report, target: Any, opts: Any, lib: Path) -> None:
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
            # As prepare() does for the small shapes: the first recipe (the one the small shapes used
            # most, then the others) whose reference is finite and well conditioned (input
            # amplification within ACCEPT_AMPLIFICATION, and the FMA-contracted reference within the
            # plain tolerance); else the least ill-conditioned one, with the tolerance widened.
            drawn: tuple[str, Any, Any, float, float] | None = None
            why = []
            amp_of: dict[str, float] = {}
            for ri, recipe in enumerate(recipes):
                x = make_inputs(sig, shape, seed_for(report.seed, 500 + s, ri), ["signed", "uniform"][s % 2], recipe)
                if x is None:
                    continue
                r = ref.run(x, timeout=1800)
                if not finite(sig, x, r):
                    why.append(f"'{recipe}': the reference is not finite")
                    continue
                amp = amplification(ref, sig, x, r, seed_for(report.seed, 600 + s, ri),
                                    timeout=1800)
                if amp > MAX_AMPLIFICATION:
                    why.append(f"'{recipe}': ill-conditioned (amplification {amp:.1e})")
                    continue
                spread = rounding_spread(ref, sig, x, r, timeout=1800)
                try:
                    widen = max(1.0, amp / ACCEPT_AMPLIFICATION, spread_widen(sig, depth, spread))
                except Skip as e:
                    why.append(f"'{recipe}': {e}")
                    continue
                amp_of[recipe] = amp
                if drawn is None or widen < drawn[4]:
                    drawn = (recipe, x, r, spread, widen)
                if widen <= 1.0:
                    break
            if drawn is None:
                report.note(f"stage (e): seed {s}: no input recipe gives a usable reference at full size "
                            f"({'; '.join(why)}); draw skipped")
                continue
            recipe, x, r, spread, widen = drawn
            res = worker.request({"op": "run", "inputs": x, "device": False}, timeout=600)
            if s % 2:  # odd draws: the reference again, after the candidate (state shared through files, ...)
                r2 = ref.run(x, timeout=1800)
                if any(not same_bits(r2[a.name], r[a.name]).all() for a in sig.outputs):
                    report.note(f"stage (e): seed {s}: the reference is not deterministic")
                r = r2
            if widen > 1:
                report.note(f"stage (e): seed {s}: tolerance widened {widen:.1e}x "
                            f"(amplification {amp_of[recipe]:.1e}, rounding spread {spread:.1e}, recipe '{recipe}')")
            prep = Prepared(shape, recipe, "signed", "signed", x, x, r, r, depth, 1.0, widen, False, False,
                            spread=spread)
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


def _stage_f(stage: Stage, report: Report, target: Any, opts: Any, lib: Path) -> None:
    sig = target.sig
    sizes = full_sizes(target, opts)
    shape = Shape("full", {**sizes, **{n: 2 for n in sig.other_ints}})
    x = make_inputs(sig, shape, seed_for(report.seed, 900), "signed", _preferred_recipes(report)[0]) or \
        make_inputs(sig, shape, seed_for(report.seed, 900), "signed", "random")
    assert x is not None
    set_bytes = sum(v.nbytes for v in x.values() if isinstance(v, np.ndarray))
    sets = int(max(2, min(8, math.ceil(2 * 60e6 / max(set_bytes, 1)), 4e9 // max(set_bytes, 1))))
    marks: dict[str, float] = {}
    first = max(report.timing.get("dropin_first_call_ms") or [0.0]) / 1e3  # seconds, from stage (e)
    slow = first > 2.0
    worker, device = _load(target, lib)
    try:
        res = worker.request({"op": "time", "inputs": x, "device": device, "sets": sets,
                              "warmup": 1 if slow else 3, "iters": 3 if slow else 30,
                              "max_seconds": 10.0, "dropin_iters": 1 if slow else 3},
                             timeout=max(600.0, 20 * first),
                             on_event=lambda ev, t: marks.__setitem__(ev["event"], t))
    finally:
        worker.close()
    floor_ms = transfer_bytes(sig, shape.scalars) / COPY_BANDWIDTH * 1e3
    ref_ms = statistics.median(report.timing.get("reference_ms") or [float("nan")])
    t = report.timing
    t.update(sizes=dict(shape.scalars), rotated_sets=sets, floor_ms=floor_ms,
             dropin_ms=statistics.median(res["dropin_ms"]) if res["dropin_ms"] else None)
    if device and res["event_ms"]:
        ev, host, sync = res["event_ms"], res["host_ms"], res["sync_ms"]
        med = statistics.median(ev)
        t.update(median_ms=med, method=f"CUDA events on {sig.name}_device, median of {len(ev)}",
                 host_median_ms=statistics.median(host), sync_median_ms=statistics.median(sync), samples=len(ev))
        if res["errors"]:
            stage.status, stage.check = FAIL, "cuda-error"
            stage.message = f"{sig.name}_device returned error {res['errors'][0]} while timed"
            return
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
    stage.message = (f"median {med:.4f} ms at {shape} (floor {floor_ms:.4f} ms"
                     + (f", {t['speedup']:.1f}x the gcc reference" if t.get("speedup") else "") + ")")

"""Stage (c): the emitted CUDA itself, executed on the CPU by the simulator, against the reference.

The .cu file is built by :func:`transpile.sim.build` with the verifier's
audit header (``include/verify_audit.h``: stream discipline, inter-block
races).  For each shape (small sizes, see :func:`synth.shapes`) one forked
child loads the library and makes these calls, each on fresh copies of the
inputs in host buffers with guard zones, ``out`` arrays poisoned:

====  =========================================  ===============================
run   inputs, schedule                           failure is reported as
====  =========================================  ===============================
A     first set, threads/blocks in order          its class (mismatch, ...)
B     second, different set, in order             ``fresh-input`` (wrong there, cached, hard-coded)
A2    first set again, in order                   ``determinism`` (must be bitwise equal to A)
C     first set, shuffled schedule (seeded)       ``schedule`` (race, missing barrier)
D     first set, through NAME_device on a         ``device-entry``
      non-blocking stream, device pointers
L     first set, one-block host loops off         ``launch-by-launch``
      (only files that have them): fused steps
      where the file has them, else launches
S     first set, one-block loops and fused steps  ``launch-by-launch``
      off: launches one by one (only files with
      fused steps, transpile/cuda/steps.py)
W     first set, shuffled schedule, row programs  ``launch-by-launch``
      a warp a row (only files with them: the
      small shapes take the block-a-row form)
G     first set, shuffled schedule, atomic bins   ``launch-by-launch``
      in global memory (only files with shared
      bins: transpile/cuda/atomics.py)
H     first set, the drop-in's host path (only    ``host-path``
      files that have one: every other run is
      forced onto the GPU path,
      transpile/cuda/dropin.py)
M     first set, shuffled schedule, the FMA       ``launch-by-launch``
      kernels in place of the tensor-core ones
      (files with both: transpile/cuda/mma.py)
====  =========================================  ===============================

Before the values, each run is checked for: a crash or timeout, device guard
zones (out-of-bounds writes, ``device-guard``), CUDA errors and simulator
diagnostics (``cuda-error``), host guard zones (``host-guard``), inter-block
races (``block-race``), stream discipline (``stream``: work of one stream used by
another without an event between them, found by the simulator's vector clocks,
or the harness's own stream checks), and inputs declared
read-only that changed (``input-modified``).  The first failure ends the stage.
"""

from __future__ import annotations

import ctypes
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from transpile.cuda.atomics import PRIVATE_ENV  # run G: 0, atomic bins in global memory (large bin counts)
from transpile.cuda.dropin import ENV as HOST_ENV  # run H: 1, the drop-in's host path; 0 for the others
from transpile.cuda.mma import ENV as MMA_ENV  # run M: 0, the FMA kernels (GPUs before the tensor cores')
from transpile.cuda.oneblock import ENV as ONE_BLOCK_ENV  # set to 0 for run L: the path of larger sizes
from transpile.cuda.reduce import ROWPROG_ENV  # run W: 0, a warp a row (the form of many rows)
from transpile.cuda.steps import ENV as STEPS_ENV  # run S: 0 (one-block off too), launches one by one
from transpile.verify.checks import RO_MARK, HostBuffers, ReadOnlyGuard, compare, same_bits
from transpile.verify.prepare import Prepared, Skip, prepare
from transpile.verify.proc import fork_stream
from transpile.verify.reference import cache_dir, call_dropin, ctype_args
from transpile.verify.report import FAIL, INCONCLUSIVE, NA, PASS, Report, Stage
from transpile.verify.signature import KernelSig, check_dropin, find_dropin
from transpile.verify.synth import Inputs, Shape, alternates, seed_for, shapes

AUDIT_HEADER = Path(__file__).resolve().parent / "include" / "verify_audit.h"
WORK_BUDGET = {"quick": 2e5, "full": 3e6}
"""Upper bound on a shape's statement executions in the simulator (and the gcc reference)."""
INTERP_WORK_BUDGET = {"quick": 2e4, "full": 6e4}
"""The same with the (slow) IR interpreter as the reference."""
SMALL_WORK = 3e5
"""A cap (``Options.sim_work``) for callers whose point is made by shapes of a few tiles: sizes up to
65 for a matmul, 257 for a matrix-vector kernel.  The full budget's larger shapes cost most of the
simulation (atax's n = 1025: 7 of its 10 s) and reach no other emitter path."""


@dataclass(frozen=True)
class Call:
    """One call the child makes."""

    label: str
    inputs: Inputs
    seed: int
    device: bool = False
    env: tuple[tuple[str, str], ...] = ()  # environment variables set for this call only
    bufs: str = ""  # calls with the same key run on the same buffers (same pointers); "" a fresh set
    fill_byte: int = 0xFF  # the simulator's fill of fresh device allocations during this call


def base_label(label: str) -> str:
    """The run a label repeats (``B*2`` is run B's inputs again, later in the same process)."""
    return label.split("*")[0]


FILL_BYTES = (0xFF, 0x3F, 0x00)
"""Fresh device memory during a call: 0xFF bytes (NaN), 0x3F (finite: 4.8e-4 as f64, 0.75 as f32), zeros."""

EXTRA_RUNS: dict[str, tuple[str, str]] = {
    "P": ("repeated-call", "on the same host buffers as two earlier calls (same sizes and scalars), one input "
                           "element changed and the outputs filled with zeros or random values"),
    "Q2": ("scalars", "on the first call's arrays with other scalars (0, 1, -1, negative or large)"),
    "Q3": ("scalars", "on the first call's arrays with other scalars (0, 1, -1, negative or large)"),
    "R": ("special-values", "with Inf, -Inf, NaN, -0.0 and subnormals in a few input elements, where the "
                            "reference's result is defined (NaN and Inf positions must match)"),
    "I": ("repeated-call", "on the previous shape's inputs, called between this shape's calls"),
    "D2": ("repeated-call", "through NAME_device again on the same device buffers, with the second input set"),
}
"""The runs added against state kept across calls and keyed inputs (issue 38, items 3 and 4): the
check a value failure is reported as, and what the run is."""


def build_sim(cu: Path, *, audit: bool = True) -> Any:
    """The simulator build of ``cu`` (with the audit header unless ``audit`` is False)."""
    from transpile.sim import build

    # glibc's fortified longjmp refuses to jump between the simulator's fiber stacks
    # ("longjmp causes uninitialized stack frame") where gcc enables _FORTIFY_SOURCE by default.
    extra: tuple[str, ...] = ("-U_FORTIFY_SOURCE",)
    if audit:  # build() keys its cache on the header's text; no -D the candidate could test
        extra += ("-include", str(AUDIT_HEADER))
    return build(cu, cache_dir("sim"), extra_flags=extra)


# ---------------------------------------------------------------------------
# The child


def _child(send: Any, library: str, sig: KernelSig, calls: list[Call], audit: bool) -> None:
    from transpile.sim import SimLibrary, neutral_process

    lib = SimLibrary(library)
    lib.set_quiet(True)
    api = _Audit(lib.lib) if audit else None
    host: dict[str, HostBuffers] = {}
    dev: dict[str, dict[str, Any]] = {}
    guard = ReadOnlyGuard()
    neutral_process()  # the candidate sees ./a.out and an ordinary environment (docs/verify.md)
    for call in calls:
        send(("start", call.label))
        saved = {k: os.environ.get(k) for k, _v in call.env}
        os.environ.update(dict(call.env))
        lib.set_fill_byte(call.fill_byte)
        try:
            if call.device:
                res = _device_call(lib, api, sig, call, dev)
            else:
                res = _dropin_call(lib, api, sig, call, host, guard, send)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        send(("result", call.label, res))


class _Audit:
    """The audit header's C API (``__verify_*``) with its C signatures."""

    _SIGS: dict[str, tuple[Any, list[Any]]] = {
        "reset": (None, []), "split": (None, [ctypes.c_int]), "begin": (None, [ctypes.c_int, ctypes.c_void_p]),
        "end": (None, []), "issues": (ctypes.c_char_p, []), "stream": (ctypes.c_void_p, []),
        "stream_sync": (ctypes.c_int, [ctypes.c_void_p]), "malloc": (ctypes.c_void_p, [ctypes.c_ulonglong]),
        "free": (ctypes.c_int, [ctypes.c_void_p]),
    }

    def __init__(self, lib: Any) -> None:
        self.fns: dict[str, Any] = {}
        for name, (restype, argtypes) in self._SIGS.items():
            fn = lib[f"__verify_{name}"]  # each lookup makes a new function object: keep this one
            fn.restype, fn.argtypes = restype, argtypes
            self.fns[name] = fn

    def __getattr__(self, name: str) -> Any:
        return self.fns[name]

    def issue_list(self) -> list[str]:
        return [s for s in (self.fns["issues"]() or b"").decode(errors="replace").splitlines() if s]


def _findings(lib: Any, api: _Audit | None) -> dict[str, Any]:
    f = lib.findings()
    return {"last_error": f.last_error, "guard": f.guard_violations, "diagnostics": f.diagnostics,
            "issues": api.issue_list() if api else []}


def _dropin_call(lib: Any, api: _Audit | None, sig: KernelSig, call: Call, kept: dict[str, HostBuffers],
                 guard: ReadOnlyGuard, send: Any) -> dict[str, Any]:
    arrays = {a.name: call.inputs[a.name] for a in sig.arrays}
    bufs = kept.get(call.bufs) if call.bufs else None
    if bufs is not None and bufs.fits(arrays):
        bufs.load(arrays)
    else:
        bufs = HostBuffers(arrays, pattern_seed=call.seed + 7)
        if call.bufs:
            kept[call.bufs] = bufs
    ptrs = {a.name: ctypes.c_void_p(bufs.address(a.name)) for a in sig.arrays}
    fn = lib.lib[sig.name]
    lib.reset()
    lib.set_schedule(call.seed)
    if api:
        api.reset()
        api.begin(0, None)
    # Read-only inputs: a write during the call (even one undone before it returns) ends the child
    # with a located report (checks.ReadOnlyGuard); the parent maps the range back to the array.
    inputs = [a.name for a in sig.arrays if a.intent == "in" and call.inputs[a.name].size]
    guard.protect(bufs, inputs)
    send(("protected", call.label, list(guard.names)))
    try:
        call_dropin(fn, sig, call.inputs, ptrs)
    finally:
        guard.release()
    if api:
        api.end()
    return {"arrays": bufs.arrays(), "host_guard": bufs.violations(), **_findings(lib, api)}


def _device_call(lib: Any, api: _Audit | None, sig: KernelSig, call: Call,
                 kept: dict[str, dict[str, Any]]) -> dict[str, Any]:
    assert api is not None, "NAME_device runs need the audit header"
    api.reset()
    stream = api.stream()
    host = {a.name: np.ascontiguousarray(call.inputs[a.name]).copy() for a in sig.arrays}
    dev = kept.get(call.bufs) if call.bufs else None
    if dev is None or set(dev) != set(host) or any(dev[n][1] != host[n].nbytes for n in host):
        dev = {}
        for name, arr in host.items():
            p = api.malloc(arr.nbytes)
            if not p:
                raise MemoryError(f"simulated cudaMalloc of {arr.nbytes} bytes failed")
            dev[name] = (ctypes.c_void_p(p), arr.nbytes)
        if call.bufs:
            kept[call.bufs] = dev
    for name, arr in host.items():
        ctypes.memmove(dev[name][0], arr.ctypes.data, arr.nbytes)
    ptr = {name: d[0] for name, d in dev.items()}
    types, values = ctype_args(sig, call.inputs, ptr)
    fn = lib.lib[f"{sig.name}_device"]
    fn.restype, fn.argtypes = ctypes.c_int, [*types, ctypes.c_void_p]
    lib.reset()
    lib.set_schedule(call.seed)
    api.begin(1, stream)
    ret = int(fn(*values, ctypes.c_void_p(stream)))
    api.end()
    api.stream_sync(stream)
    found = _findings(lib, api)
    # The device inputs are compared with what was copied in (judge_run's input-modified check):
    # a checksum around the call.  A change undone before the call returns is invisible here.
    for name, arr in host.items():
        ctypes.memmove(arr.ctypes.data, ptr[name], arr.nbytes)
    if not call.bufs:
        for name in host:
            api.free(ptr[name])
    return {"arrays": host, "host_guard": [], "ret": ret, **found}


# ---------------------------------------------------------------------------
# Judging one run


def _written_input(output: str, names: list[str]) -> str | None:
    """The read-only input a child that died by :class:`ReadOnlyGuard` wrote to ("'A' (byte 24)"),
    or None if it died otherwise."""
    at = output.rfind(RO_MARK)
    if at < 0:
        return None
    m = re.match(r"(\d+) byte (\d+)", output[at + len(RO_MARK):])
    if not m:
        return None
    k, byte = int(m.group(1)), int(m.group(2))
    name = names[k] if k < len(names) else "?"
    return f"read-only input '{name}' (byte {byte} of its buffer)"


_CUDA_ERRORS = {1: "cudaErrorInvalidValue", 2: "cudaErrorMemoryAllocation", 9: "cudaErrorInvalidConfiguration",
                98: "cudaErrorInvalidDeviceFunction", 400: "cudaErrorInvalidResourceHandle",
                700: "cudaErrorIllegalAddress", 710: "cudaErrorAssert", 719: "cudaErrorLaunchFailure"}


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def safe_output(text: str) -> str:
    """The lines of a child's output that carry no data values: the runtime's and the simulator's own."""
    keep = [ln.strip() for ln in text.splitlines()
            if re.match(r"\s*(transpile:|cuda-sim|CUDA error|.*Assertion .* failed|terminate called)", ln)]
    return "; ".join(keep[-3:])


def judge_run(label: str, res: dict[str, Any], sig: KernelSig, prep: Prepared, x: Inputs,
              ref: dict[str, np.ndarray], report: Report, *, base: dict[str, np.ndarray] | None = None,
              schedule_seed: int = 0, where: str = "") -> tuple[str, str] | None:
    """The failed check and its message for one run, or None if the run passed."""
    call_label, label = label, base_label(label)
    second = label in ("B", "D2", "I")  # I: the previous shape's second set, judged with its own tolerance
    extra = label.lower() if label in ("P", "Q2", "Q3") else ""  # sets with their own widening
    if res.get("guard"):
        return "device-guard", (f"{where}{res['guard']} guard byte(s) around device buffers overwritten "
                                f"(out-of-bounds write): {_first_line(res.get('diagnostics', ''))}")
    race = next((ln.strip() for ln in res.get("diagnostics", "").splitlines()
                 if ln.startswith("race on device allocation")), None)
    if race:  # the simulator's stream-order check: work on two streams without an event between them
        return "stream", f"{where}{race}"
    data_race = next((ln.strip() for ln in res.get("diagnostics", "").splitlines() if ln.startswith("data race ")),
                     None)
    if data_race:  # the simulator's race detector (transpile/sim/include/cuda_sim_race.h)
        return ("block-race" if data_race.startswith("data race between blocks") else "race"), f"{where}{data_race}"
    if res.get("last_error") or res.get("diagnostics") or res.get("ret"):
        code = res.get("ret") or res.get("last_error")
        name = _CUDA_ERRORS.get(code, f"error {code}") if code else "diagnostic"
        return "cuda-error", f"{where}{name}: {_first_line(res.get('diagnostics', '')) or 'reported by the call'}"
    if res.get("host_guard"):
        return "host-guard", f"{where}{res['host_guard'][0]} (a write outside the array)"
    issues = res.get("issues", [])
    race = [s for s in issues if s.startswith("race:")]
    if race:
        return "block-race", where + race[0][len("race: "):]
    stream = [s for s in issues if s.startswith("stream:")]
    if stream:
        return "stream", where + stream[0][len("stream: "):]
    out = res["arrays"]
    for a in sig.arrays:
        if a.intent == "in" and not same_bits(out[a.name], x[a.name]).all():
            n = int((~same_bits(out[a.name], x[a.name])).sum())
            return "input-modified", f"{where}read-only input '{a.name}': {n} element(s) changed by the call"
    if base is not None:  # determinism: bitwise equal to an earlier run on the same inputs
        for a in sig.outputs:
            diff = ~same_bits(out[a.name], base[a.name])
            if diff.any():
                first = "".join(f"[{i}]" for i in np.argwhere(diff)[0])
                return "determinism", (f"{where}'{a.name}': {int(diff.sum())} element(s) differ between two calls "
                                       f"on the same inputs (first at {first}): state kept between calls, "
                                       "or uninitialised memory")
        return None
    for a in sig.outputs:
        bound = prep.bound.get(a.name) if prep.bound is not None and x is prep.x1 else None
        cmp = compare(a.name, out[a.name], ref[a.name], x[a.name], prep.tol(a.dtype, second=second, extra=extra), bound=bound)
        report.record_error(a.name, cmp.max_err, cmp.tol)
        if cmp.ok:
            continue
        msg = cmp.message()
        if label in EXTRA_RUNS:
            check, what = EXTRA_RUNS[label]
            again = "" if call_label == label else " (repeated later in the same process)"
            return check, (f"{where}correct on the earlier calls, wrong on a call {what.replace('NAME', sig.name)}"
                           f"{again}: {msg}")
        if label == "B":
            # Only a result that is the first set's answer is called cached; any other miss is just wrong.
            kept = all(compare(b.name, out[b.name], prep.ref1[b.name], prep.x1[b.name], prep.tol(b.dtype)).ok
                       for b in sig.outputs)
            why = " (it is the first set's result: cached from the earlier call, or hard-coded?)" if kept else ""
            return "fresh-input", (f"{where}correct on the first inputs, wrong on a second, different set: "
                                   f"{cmp.brief()}{why}")
        if label == "C":
            return "schedule", (f"{where}correct with threads in order, wrong under a shuffled schedule "
                                f"(schedule seed {schedule_seed}): {msg} (a race or a missing __syncthreads?)")
        if label == "D":
            return "device-entry", f"{where}through {sig.name}_device on a non-blocking stream: {msg}"
        if label == "L":
            return "launch-by-launch", (f"{where}correct with each one-block host loop run by one block, wrong "
                                        f"with the path of larger sizes ({ONE_BLOCK_ENV}=0: fused steps where the "
                                        f"file has them, else its launches one by one): {msg}")
        if label == "W":
            return "launch-by-launch", (f"{where}correct with a block a row, wrong with a warp a row ({ROWPROG_ENV}=0, "
                                        f"the form of many rows; schedule seed {schedule_seed}): {msg}")
        if label == "G":
            return "launch-by-launch", (f"{where}correct with each block's bins in shared memory, wrong with "
                                        f"the bins in global memory ({PRIVATE_ENV}=0, the form of many bins; "
                                        f"schedule seed {schedule_seed}): {msg}")
        if label == "H":
            return "host-path", f"{where}correct on the GPU path, wrong on the host path ({HOST_ENV}=1): {msg}"
        if label == "M":
            return "launch-by-launch", (f"{where}correct with the tensor-core kernels, wrong with their FMA "
                                        f"kernels ({MMA_ENV}=0, the path of GPUs before sm_80/sm_90; schedule "
                                        f"seed {schedule_seed}): {msg}")
        if label == "S":
            return "launch-by-launch", (f"{where}wrong with each host loop's launches one by one "
                                        f"({ONE_BLOCK_ENV}=0, {STEPS_ENV}=0): {msg}")
        assert cmp.kind is not None
        return cmp.kind, where + msg
    return None


# ---------------------------------------------------------------------------
# The stage


def run_stage(stage: Stage, report: Report, *, cu: Path, sig: KernelSig, kernel: Any, reference: Any,
              seed: int, mode: str, requested: dict[str, int] | None, nvcc_ok: bool,
              timeout: float = 120.0, work: float | None = None) -> None:
    """Run stage (c), filling in ``stage``; ``work`` caps a shape's work below the mode's budget."""
    from transpile.sim import SimBuildError, SimUnsupported

    t0 = time.perf_counter()
    audit = True
    try:
        try:
            b = build_sim(cu, audit=True)
        except SimBuildError:
            b = build_sim(cu, audit=False)  # the audit header clashes with this file: run without it
            audit = False
            report.note("stage (c): the stream and race audits could not be compiled into this file; "
                        "they did not run")
    except SimUnsupported as e:
        stage.status, stage.message = NA, f"stage (c) not applicable: {e.feature}"
        return
    except SimBuildError as e:
        first = _first_line(e.output or e.msg)
        if nvcc_ok:  # valid CUDA that g++ cannot take with the simulator's header: a simulator limitation
            stage.status, stage.message = NA, f"stage (c) not applicable: the simulator cannot compile it ({first})"
        else:
            stage.status, stage.check, stage.message = FAIL, "compile", f"g++ (simulator) rejected the file: {first}"
        return
    if sig.name not in b.symbols:
        stage.status, stage.check = FAIL, "signature"
        stage.message = f"the library exports no extern \"C\" function '{sig.name}'"
        return
    device = f"{sig.name}_device" in b.symbols and audit
    text = cu.read_text()
    one_block = ONE_BLOCK_ENV in text
    fused_steps = STEPS_ENV in text
    row_programs = ROWPROG_ENV in text
    private_bins = PRIVATE_ENV in text
    host_path = HOST_ENV in text
    fma_kernels = MMA_ENV in text
    if device:
        params, _ = find_dropin(text, f"{sig.name}_device")
        if params is None or len(params) != len(sig.args) + 1 or check_dropin(sig, params[:-1]):
            device = False
            report.note(f"stage (c): {sig.name}_device does not take (<the C parameters>, cudaStream_t); "
                        "not called")
    budget = (INTERP_WORK_BUDGET if reference.kind == "interp" else WORK_BUDGET)[mode]
    budget = budget if work is None else min(budget, work)
    todo = shapes(sig, kernel, mode=mode, requested=requested, work_budget=budget, seed=seed)
    tested = 0
    prev: Prepared | None = None
    ncalls = 0
    originals = len(todo)

    def try_others(index: int, shape: Shape) -> None:
        """Queue :func:`alternates` of a shape of the first list that tested nothing (not of an alternate)."""
        if index < originals:
            todo.extend(o for o in alternates(sig, kernel, shape, work_budget=budget)
                        if all(t.scalars != o.scalars for t in todo))

    for index, shape in enumerate(todo):
        dists = ("signed", "uniform") if mode == "quick" else \
            [("signed", "uniform"), ("uniform", "large"), ("integers", "signed"), ("tiny", "signed")][index % 4]
        try:
            # The extra runs (scalars, special values, fills, repeated calls) on the first two shapes
            # tested: two shapes draw every kind of scalar, and state kept across calls needs no more.
            prep = prepare(reference, sig, kernel, shape, seed=seed, index=index, dist1=dists[0], dist2=dists[1],
                           extra=tested < 2)
        except Skip as e:
            report.note(f"stage (c): shape {shape} skipped: {e}")
            try_others(index, shape)  # tried after the others (this loop reaches them)
            continue
        if prep.ghost:
            try_others(index, shape)
        for n in prep.notes:
            report.note(n)
        report.shapes.append({"stage": "c", "shape": shape.label, "sizes": dict(shape.scalars),
                              "recipe": prep.recipe, "distributions": [prep.dist1, prep.dist2],
                              "depth": round(prep.depth, 1), "ghost": prep.ghost, "degenerate": prep.degenerate})
        sched = int(seed_for(seed, index, 9).integers(1, 2**31))
        # Fresh device memory: NaN bytes in run A (a read of it shows as a NaN), then per seed
        # finite bytes or zeros in the others (a kernel that only "clears" NaN garbage fails there).
        fills = [FILL_BYTES[(k + seed) % 3] for k in range(3)]
        ex = prep.extra
        # A, B, P and Q2 on the same host buffers (same pointers), A2 and Q3 on others: a result
        # memoised on pointers, sizes, scalars or sampled elements is stale in B, P, Q2 or Q3.
        calls = [Call("A", prep.x1, 0, bufs="h1"), Call("B", prep.x2, 0, bufs="h1", fill_byte=fills[1]),
                 Call("A2", prep.x1, 0, bufs="h2", fill_byte=fills[2]), Call("C", prep.x1, sched)]
        if device:
            calls += [Call("D", prep.x1, 0, device=True, bufs="d1"),
                      Call("D2", prep.x2, 0, device=True, bufs="d1", fill_byte=fills[1])]
        if "p" in ex:
            calls.append(Call("P", ex["p"][0], 0, bufs="h1", fill_byte=fills[1]))
        for k, q in enumerate(("q", "q2", "q3")):
            if q in ex:
                calls.append(Call(q.upper(), ex[q][0], 0, bufs=("h1", "h2")[k % 2], fill_byte=fills[k % 3]))
        if "r" in ex:
            calls.append(Call("R", ex["r"][0], 0))
        if prev is not None:  # the previous shape's second set, between this shape's calls
            calls.append(Call("I", prev.x2, 0, bufs="hi", fill_byte=fills[2]))
        if tested == 0:  # the first shape tested: more calls in the same process, each checked
            again = [("B", prep.x2, "h2"), ("A", prep.x1, "h1")]
            calls += [Call(f"{lab}*{k + 2}", xs, 0, bufs=key, fill_byte=fills[k % 3])
                      for k, (lab, xs, key) in enumerate(again)]
            if device:  # a third NAME_device call on the same device buffers
                calls.append(Call("D*4", prep.x1, 0, device=True, bufs="d1", fill_byte=fills[2]))
        if one_block:  # the same host loops with their launches one by one (the path of larger sizes)
            calls.append(Call("L", prep.x1, 0, env=((ONE_BLOCK_ENV, "0"),)))
        if fused_steps:  # fused host loops' launches one by one (the fallback when scratch cannot be allocated)
            calls.append(Call("S", prep.x1, 0, env=((ONE_BLOCK_ENV, "0"), (STEPS_ENV, "0"))))
        if row_programs:  # the shapes are small: each row program ran a block a row; now a warp a row
            calls.append(Call("W", prep.x1, sched, env=((ROWPROG_ENV, "0"),)))
        if private_bins:  # the shapes' bins fit in shared memory: now the global form
            calls.append(Call("G", prep.x1, sched, env=((PRIVATE_ENV, "0"),)))
        if fma_kernels:  # the simulator has the tensor-core bodies (no __CUDA_ARCH__): now their fallbacks
            calls.append(Call("M", prep.x1, sched, env=((MMA_ENV, "0"),)))
        if host_path:  # the runs above on the GPU path whatever the environment says; H on the host's
            calls = [replace(c, env=((HOST_ENV, "0"), *c.env)) for c in calls]
            calls.append(Call("H", prep.x1, 0, env=((HOST_ENV, "1"),)))
        def child(send: Any, c: list[Call] = calls) -> None:
            _child(send, str(b.library), sig, c, audit)

        msgs, _, err = fork_stream(child, timeout=timeout, what=f"{sig.name}() in the CUDA simulator")
        # Both orders: the reference runs again after the candidate, on the second set.
        again = reference.run(prep.x2)
        if any(not same_bits(again[a.name], prep.ref2[a.name]).all() for a in sig.outputs):
            report.note(f"stage (c): the reference gave different results on the same inputs at {shape.label}")
        results = {m[1]: m[2] for m in msgs if m[0] == "result"}
        where = f"at {shape}: "
        started = [m[1] for m in msgs if m[0] == "start"]
        failed: tuple[str, str] | None = None
        protected = {m[1]: m[2] for m in msgs if m[0] == "protected"}
        for call in calls:
            if call.label not in results:
                if err is not None and err.kind != "error" and started and started[-1] == call.label:
                    out = safe_output(err.output)
                    what = {"A": "", "B": "second call ", "A2": "third call ", "C": "shuffled-schedule call ",
                            "D": f"{sig.name}_device call ", "L": "launch-by-launch call ",
                            "S": "one-by-one call ", "W": "warp-a-row call ", "G": "global-bins call ",
                            "H": "host-path call "
                            }.get(call.label, f"call {call.label} ")
                    written = _written_input(err.output, protected.get(call.label, []))
                    if written is not None:
                        failed = ("input-modified", f"{where}{what}wrote {written} while it ran "
                                  "(input-modified-during-call: the inputs are read-only during the call, "
                                  "a change undone before it returns included)")
                    else:
                        failed = (err.kind if err.kind in ("crash", "timeout") else "crash",
                                  f"{where}{what}{err.message}{': ' + out if out else ''}")
                    stage.details["output"] = err.output[-2000:]
                break
            res = results[call.label]
            judged = prep
            lab = base_label(call.label)
            if lab == "I":
                assert prev is not None
                judged, x, ref = prev, prev.x2, prev.ref2
            elif lab in ("B", "D2"):
                x, ref = prep.x2, prep.ref2
            elif lab in ("P", "Q2", "Q3", "R"):
                x, ref = prep.extra[lab.lower()]
            else:
                x, ref = prep.x1, prep.ref1
            base = results["A"]["arrays"] if call.label == "A2" else None
            failed = judge_run(call.label, res, sig, judged, x, ref, report, base=base, schedule_seed=sched,
                               where=where)
            if failed:
                break
        if failed is None and err is not None and err.kind == "error":  # the harness itself failed
            stage.status, stage.check = INCONCLUSIVE, "harness"
            stage.message = f"{where}the verifier's simulator harness failed: {err.message}"
            stage.details["traceback"] = err.output[-3000:]
            return
        if failed is None and err is not None and len(results) < len(calls):
            failed = (err.kind, f"{where}{err.message}")
        if failed:
            stage.status, (stage.check, stage.message) = FAIL, failed
            stage.details["shape"] = shape.label
            stage.seconds = time.perf_counter() - t0
            return
        tested += 1
        ncalls += len(calls)
        prev = prep
        # The structural profile's input (profile.py): of the shapes that tested something, the one with
        # the most input elements (the last on a tie; quick mode's last shape may be its smallest).
        size = sum(int(getattr(v, "size", 1)) for v in prep.x1.values())
        if not prep.ghost and (report.profile_input is None or size >= report.profile_input[3]):
            report.profile_input = (str(b.library), prep.x1, shape.label, size)
    stage.seconds = time.perf_counter() - t0
    real = [s for s in report.shapes if s["stage"] == "c" and not s["ghost"]]
    if not tested:
        stage.status, stage.check = INCONCLUSIVE, "inputs"
        stage.message = "no shape could be tested (see the notes)"
    elif not real:
        stage.status, stage.check = INCONCLUSIVE, "ghost"
        stage.message = "degenerate test: at every shape tested the reference leaves its outputs unchanged"
    else:
        stage.status = PASS
        stage.message = (f"{tested} shape(s), {ncalls} checked calls "
                         f"({', '.join(str(s['shape']) for s in report.shapes if s['stage'] == 'c')})")

"""The GPU stages' worker protocol and checks, without a GPU.

The worker runs with :class:`gpu_worker.HostRuntime` ("device" memory in host memory) and a
library built by gcc plays the candidate: its ``NAME_device`` works on those pointers directly.
So the parent's side (transpile/verify/gpu.py), the worker's start and requests, stage (d)'s
repeated calls and stage (f)'s output checks all run here as they do on a GPU.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from transpile import frontend
from transpile.verify import gpu, gpu_build
from transpile.verify.reference import GccReference
from transpile.verify.report import FAIL, PASS, Report
from transpile.verify.signature import kernel_sig
from transpile.verify.stages import Options, Target

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")

FAKE = r'''
import re, sys, time
from transpile.verify.gpu_worker import Channel

fd_in, fd_out, _ = re.search(r"_start\((\d+), (\d+), (\w+)\)", sys.stdin.read()).groups()
chan = Channel(int(fd_in), int(fd_out))
chan.send({"event": "hello", "pid": 0})
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
    w = gpu.Worker(command=[sys.executable, str(fake)])
    marks: dict[str, float] = {}
    try:
        reply = w.request({"op": "time"}, timeout=30, on_event=lambda ev, t: marks.__setitem__(ev["event"], t))
    finally:
        w.close()
    assert reply["answer"] == {"op": "go"}
    assert marks["timing-end"] - marks["timing-start"] >= reply["loop_s"]


# ---------------------------------------------------------------------------
# What the candidate sees of its process

PROBE = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static int put(unsigned char *out, int at, int cap, const char *key, const char *val, int len) {
  int k = (int)strlen(key);
  if (at + k + len + 2 >= cap) return at;
  memcpy(out + at, key, k); at += k; out[at++] = '=';
  for (int i = 0; i < len; i++) out[at++] = val[i] ? (unsigned char)val[i] : ' ';
  out[at++] = '\n';
  return at;
}

static int file(unsigned char *out, int at, int cap, const char *key, const char *path) {
  char buf[8192];
  FILE *f = fopen(path, "rb");
  int n = f ? (int)fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == 0)) n--;
  return put(out, at, cap, key, buf, n);
}

void probe(int n, unsigned char *out) {
  char path[256], buf[4096];
  int at = 0;
  Dl_info info;
  at = file(out, at, n, "cmdline", "/proc/self/cmdline");
  at = file(out, at, n, "comm", "/proc/self/comm");
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)getppid());
  at = file(out, at, n, "parent", path);
  if (getcwd(buf, sizeof buf)) at = put(out, at, n, "cwd", buf, (int)strlen(buf));
  if (dladdr((void *)probe, &info) && info.dli_fname) at = put(out, at, n, "lib", info.dli_fname, (int)strlen(info.dli_fname));
  for (char **e = environ; *e; e++) at = put(out, at, n, "env", *e, (int)strlen(*e));
}

int probe_device(int n, unsigned char *out, void *stream) { probe(n, out); return 0; }
'''

PROBE_PARAMS = [("n", "i32", False, "in"), ("out", "u8", True, "out")]


def _seen(buf: np.ndarray) -> dict[str, list[str]]:
    text = bytes(buf).split(b"\0")[0].decode(errors="replace")
    seen: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, _, val = line.partition("=")
        seen.setdefault(key, []).append(val)
    return seen


@needs_gcc
def test_the_candidate_sees_a_neutral_process_the_same_when_checked_and_timed(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # A candidate that reads its command line, process name, parent, directory, library path or
    # environment finds nothing of the verifier there, and the same in a checking call (run) as in
    # a timed one (time): every mode travels through the pipe.
    src = tmp_path / "probe.c"
    src.write_text(PROBE)
    lib = tmp_path / "libprobe-0123.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True)
    monkeypatch.setattr(gpu, "RUNTIME", "host")
    monkeypatch.setenv("TRANSPILE_VERIFY_MARK", "1")  # a project switch the verifier may have set
    size = 1 << 16
    inputs = {"n": np.int32(size), "out": np.zeros(size, np.uint8)}
    seen = []
    for op in ("run", "time"):
        w = gpu.Worker(lib=gpu.GpuLibrary(lib, None))
        try:
            w.request({"op": "load", "lib": str(lib), "params": PROBE_PARAMS, "name": "probe", "device": True},
                      timeout=60)
            if op == "run":
                out = w.request({"op": "run", "inputs": inputs, "device": False}, timeout=60)["arrays"]["out"]
            else:
                res = w.request({"op": "time", "sets": [inputs], "outputs": ["out"], "device": False,
                                 "dropin_iters": 1}, timeout=60)
                out = res["last_dropin"]["arrays"]["out"]
            home = str(w.home)
        finally:
            w.close()
        s = _seen(out)
        assert s["cwd"] == [home] and s["lib"] == [f"{home}/libprobe.so"], s
        # The worker's private directory differs per worker; nothing else may.
        seen.append({k: [v.replace(home, "HOME") for v in vals] for k, vals in s.items()})
    check, timed = seen
    assert check == timed
    shown = "\n".join(f"{k}={v}" for k, vals in check.items() for v in vals)
    for word in ("transpile", "verify", "gpu_worker", "pytest", "worker"):
        assert word not in shown.lower(), (word, shown)
    assert check["cmdline"] == [f"{sys.executable} -"], check["cmdline"]
    assert check["comm"][0].startswith("python"), check["comm"]
    assert not any(v.startswith(("TRANSPILE_", "PYTEST_")) for v in check["env"])


# ---------------------------------------------------------------------------
# Stages (d) and (f) with a gcc-built candidate

SCALE = "void scale(int n, double x[n], double y[n]) {\n  for (int i = 0; i < n; i++)\n    y[i] = 2.0 * x[i] + 1.0;\n}\n"

CANDIDATE = r'''
#include <string.h>
static int calls;
static const double *last_x;
static double *last_y, cache[1 << 16];

void scale(int n, const double *x, double *y) {
  calls++;
#ifdef FIRST_CALLS
  if (calls > FIRST_CALLS) { for (int i = 0; i < n; i++) y[i] = 2.0 * x[i]; return; }
#endif
  for (int i = 0; i < n; i++) y[i] = 2.0 * x[i] + 1.0;
#ifdef LAST_ELEMENT_AFTER
  if (calls > LAST_ELEMENT_AFTER && n > 1) y[n - 1] = 0.0;
#endif
}

int scale_device(int n, const double *x, double *y, void *stream) {
#ifdef REPLAY
  if (x == last_x && y == last_y && n <= (1 << 16)) { memcpy(y, cache, n * sizeof(double)); return 0; }
#endif
  scale(n, x, y);
#ifdef REPLAY
  last_x = x; last_y = y;
  if (n <= (1 << 16)) memcpy(cache, y, n * sizeof(double));
#endif
  return 0;
}
'''


@pytest.fixture(scope="module")
def scale_target(tmp_path_factory: pytest.TempPathFactory) -> Target:
    d = tmp_path_factory.mktemp("scale")
    (d / "scale.c").write_text(SCALE)
    m = frontend.load(d / "scale.c")
    k = m.kernels[0]
    sig = kernel_sig(k)
    return Target(d / "scale.cu", sig, k, m, GccReference(sig, d / "scale.c", function="scale"))


def _candidate(tmp_path: Path, *defines: str) -> gpu.GpuLibrary:
    src = tmp_path / "cand.c"
    src.write_text(CANDIDATE)
    lib = tmp_path / f"libscale{len(list(tmp_path.glob('*.so')))}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", *(f"-D{d}" for d in defines), "-o", str(lib), str(src)],
                   check=True)
    return gpu.GpuLibrary(lib, None)


def _stage(key: str, target: Target, lib: gpu.GpuLibrary, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, str]:
    monkeypatch.setattr(gpu, "RUNTIME", "host")
    monkeypatch.setattr(gpu, "detect", lambda force=None: gpu.GpuInfo(True, "", "host", "host"))
    monkeypatch.setattr(gpu, "full_sizes", lambda target, opts, report=None: {"n": 4099})
    report = Report("scale", "cand", "scale.c", seed=11)
    stage = report.stage(key)
    gpu.run_built(key, stage, report, target, Options(mode="quick", full_seeds=1, sanitizer=False), lib)
    return stage.status, stage.check or "", stage.message


@needs_gcc
def test_stage_f_checks_the_output_of_every_timed_call(tmp_path: Path, scale_target: Target,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Right on the first calls only (a count of calls, or of the untimed warm-up), or wrong in one
    # element from some call on: the timing stage's reading back of every call fails it.
    status, check, message = _stage("f", scale_target, _candidate(tmp_path), monkeypatch)
    assert status == PASS, message
    assert re.search(r"\b3\d calls checked", message), message
    status, check, message = _stage("f", scale_target, _candidate(tmp_path, "FIRST_CALLS=3"), monkeypatch)
    assert (status, check) == (FAIL, "timing-output"), message
    assert "call 4 of" in message and "sampled elements wrong" in message, message
    status, check, message = _stage("f", scale_target, _candidate(tmp_path, "LAST_ELEMENT_AFTER=10"), monkeypatch)
    assert (status, check) == (FAIL, "timing-output"), message  # one element, in samples or the whole last call
    assert "1 of 6" in message or "whole output: y: 1 of 4099 elements" in message, message


@needs_gcc
def test_stage_d_calls_name_device_again_on_the_same_buffers(tmp_path: Path, scale_target: Target,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # A NAME_device that replays the result it computed for the same device pointers passes a call
    # on new buffers each time; written-over inputs in the same buffers show it.
    status, check, message = _stage("d", scale_target, _candidate(tmp_path), monkeypatch)
    assert status == PASS, message
    status, check, message = _stage("d", scale_target, _candidate(tmp_path, "REPLAY"), monkeypatch)
    assert (status, check) == (FAIL, "repeated-call"), message
    assert "same device buffers" in message, message


def test_check_timed_calls_reads_samples_and_the_last_call() -> None:
    # The comparison alone: a sampled element off, or an element the samples missed in the last call.
    class Arg:
        name, dtype = "y", np.dtype(np.float64)

    class Sig:
        outputs = (Arg(),)

    x = {"y": np.full(100, np.nan)}
    r = {"y": np.arange(100.0) + 1}
    draws = [gpu.FullDraw("random", x, r, 0.0, 1.0, 1.0)]
    good = {"calls": [{"set": 0, "timed": True, "samples": {"y": (np.array([1, 5]), r["y"][[1, 5]])}}],
            "last": {"set": 0, "call": 0, "arrays": {"y": r["y"].copy()}}}
    assert gpu.check_timed_calls(Sig(), good, draws, 1.0, "k") is None
    bad = {**good, "calls": [{"set": 0, "timed": True, "samples": {"y": (np.array([1, 5]), np.array([2.0, 7.0]))}}]}
    assert "1 of 2 sampled elements wrong (mismatch)" in (gpu.check_timed_calls(Sig(), bad, draws, 1.0, "k") or "")
    last = r["y"].copy()
    last[99] = np.nan
    missed = {**good, "last": {"set": 0, "call": 0, "arrays": {"y": last}}}
    assert "whole output: y: 1 of 100 elements" in (gpu.check_timed_calls(Sig(), missed, draws, 1.0, "k") or "")


STATE = r'''
struct FillState { unsigned long long seed; int on; int pad; unsigned long long count; };
__attribute__((visibility("hidden"))) struct FillState fill_state;
__attribute__((visibility("hidden"))) struct FillState *the_state(void) { return &fill_state; }
'''

READER = r'''
#include <string.h>
struct FillState;
struct FillState *the_state(void);
void probe(int n, unsigned char *out) { if (n >= 24) memcpy(out, the_state(), 24); }
'''


@needs_gcc
def test_the_worker_sets_the_fill_through_the_stripped_librarys_offset(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # The fill switch is hidden and its name stripped from the library; the worker reaches it by the
    # offset nm gave before stripping: each checking call gets its own seed, timing none.
    (tmp_path / "state.c").write_text(STATE)
    (tmp_path / "reader.c").write_text(READER)
    for name in ("state", "reader"):
        subprocess.run(["gcc", "-fPIC", "-O1", "-c", str(tmp_path / f"{name}.c"), "-o", str(tmp_path / f"{name}.o")],
                       check=True)
    lib = tmp_path / "libprobe.so"
    subprocess.run(["gcc", "-shared", "-o", str(lib), str(tmp_path / "reader.o"), str(tmp_path / "state.o")], check=True)
    offset, why = gpu_build.hide_interposer(lib, tmp_path / "state.o")
    assert offset is not None and not why, why
    symbols = subprocess.run(["nm", "-a", str(lib)], capture_output=True, text=True, check=True).stdout
    assert "fill_state" not in symbols and "the_state" not in symbols
    monkeypatch.setattr(gpu, "RUNTIME", "host")
    inputs = {"n": np.int32(64), "out": np.zeros(64, np.uint8)}
    w = gpu.Worker(lib=gpu.GpuLibrary(lib, offset))
    try:
        assert w.request({"op": "load", "lib": str(lib), "params": PROBE_PARAMS, "name": "probe",
                          "fill_offset": offset}, timeout=60)["fill"]
        seen = [w.request({"op": "run", "inputs": inputs, "device": False, "fill_seed": seed}, timeout=60)["arrays"]["out"]
                for seed in (12345, 2**62 + 7)]
        timed = w.request({"op": "time", "sets": [inputs], "outputs": ["out"], "device": False, "dropin_iters": 1},
                          timeout=60)["last_dropin"]["arrays"]["out"]
    finally:
        w.close()
    state = [np.frombuffer(bytes(s[:16]), dtype=np.dtype([("seed", "<u8"), ("on", "<i4"), ("pad", "<i4")]))[0]
             for s in (*seen, timed)]
    assert [(int(s["seed"]), int(s["on"])) for s in state[:2]] == [(12345, 1), (2**62 + 7, 1)]
    assert int(state[2]["on"]) == 0

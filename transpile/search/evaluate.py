"""Many verifications at once, each isolated: local processes or a Ray cluster.

:func:`run_tasks` runs :class:`Task`\\ s (an importable ``"module:function"``
called with keyword arguments, returning something JSON-able) and yields an
:class:`Outcome` for each as soon as it completes.  Every task runs in a
forked child that leads its own process group (:func:`transpile.verify.proc.fork_stream`
with ``group=True``): a task that crashes (a segfault in a candidate's host
code) or runs past ``timeout`` is killed with everything it started (nvcc,
the simulator) and reported, never taking the evaluator down.

* ``backend="local"``: up to ``jobs`` children at once, all forked and watched
  by the calling thread, which starts no other (a fork copies only the forking
  thread: a lock another thread held at that moment would stay held for ever in
  the child, which then hangs until its timeout).  Tasks that need the GPU
  stages take turns on this machine's GPU (the verifier times on the default
  device).
* ``backend="ray"``: one Ray task per submission (``num_cpus=1``; ``num_gpus=1``
  for GPU tasks, so each GPU of each node runs one at a time), with the same
  isolation inside it, results streamed back with ``ray.wait``.  ``address``
  joins a cluster (every node needs ``transpile`` installed); without it a
  local instance with ``jobs`` CPUs starts, or the one already initialised in
  this process is used.  ``pip install transpile[ray]``.

``transpile evaluate SUBMISSIONS.jsonl -o scores.jsonl`` scores candidate CUDA
files with :func:`score_submission` as the task function.  Each input line is
``{"id", "cuda" (text) or "cuda_path", "reference" (a .c or .ir path)
[, "function"]}``; relative paths are relative to the JSONL file.  Each output
line (completion order, written as it arrives, so an interrupted run keeps what
it scored) has the verdict, the failing stage and check, rewards
(:mod:`transpile.search.rewards`), the verifier's value-free summary as
``feedback``, and the seconds taken; ``status`` is ``scored``, or ``timeout``,
``crash``, ``error`` when the isolated run itself did not finish.
"""

from __future__ import annotations

import functools
import importlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait as _wait
from pathlib import Path
from typing import Any

from transpile.diagnostics import Loc, TranspileError


@dataclass(frozen=True)
class Task:
    """``fn`` (``"module:function"``) called as ``fn(**args)`` in an isolated child; ``gpu`` overrides
    :func:`run_tasks`' ``gpu`` for this task (None: use it)."""

    key: str
    fn: str
    args: dict[str, Any] = field(default_factory=dict)
    gpu: bool | None = None


@dataclass(frozen=True)
class Outcome:
    """What became of a task: ``ok`` with its JSON-able ``value``, or ``error`` (one line, for a
    traceback the lines after it); ``status`` ``ok``, ``timeout``, ``crash`` (the signal is named)
    or ``error`` (the function raised, or could not be loaded); ``seconds`` of wall time."""

    key: str
    ok: bool
    value: Any = None
    error: str | None = None
    seconds: float = 0.0
    status: str = "ok"


def resolve(spec: str) -> Callable[..., Any]:
    """The function named by ``"module:function"``."""
    module, colon, name = spec.partition(":")
    if not colon or not module or not name:
        raise ValueError(f"task function {spec!r}: expected 'module:function'")
    fn = getattr(importlib.import_module(module), name, None)
    if not callable(fn):
        raise ValueError(f"task function {spec!r}: {module} has no function {name!r}")
    return fn


def preload(fns: Iterable[str] = ()) -> None:
    """Import, in the calling thread, every module a task may import, before any child is forked.

    NOTE: a fork while another thread of this process holds a module's import
    lock (importing it for the first time) leaves that lock held for ever in
    the child, which then blocks on its first import of the module: a hang
    until the task's timeout (seen once in a dataset export, when children were
    forked from pool threads).  The local backend now forks from the calling
    thread only, but a caller may run threads of its own (and Ray workers do):
    with every module of ``transpile`` and ``passes`` (and the task functions'
    modules) imported up front, no thread imports them while children are forked.
    """
    _preload_packages()
    for fn in set(fns):
        try:
            resolve(fn)
        except Exception:  # reported per task by run_isolated
            pass


@functools.cache
def _preload_packages() -> None:
    import pkgutil

    import passes
    import transpile

    for pkg in (transpile, passes):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if info.name.rsplit(".", 1)[-1] == "__main__":  # a program, not a module to preload
                continue
            try:
                importlib.import_module(info.name)
            except Exception:  # an optional extra (ray, cupy, openai) is missing: its users import it late
                pass


def run_isolated(task: Task, timeout: float, started: Callable[[int], None] | None = None) -> Outcome:
    """``task`` in a forked child leading its own process group, killed with the group at ``timeout``."""
    from transpile.verify.proc import fork_stream

    t0 = time.perf_counter()
    child = _task_child(task)
    if isinstance(child, Outcome):
        return child
    _, text, err = fork_stream(child, timeout=timeout, what=f"task {task.key}", group=True, started=started)
    return _outcome(task, text, err, time.perf_counter() - t0)


def _task_child(task: Task) -> Callable[[Any], str] | Outcome:
    """What the child of ``task`` runs (its value as JSON text), or the error outcome of a bad name."""
    try:
        fn = resolve(task.fn)  # here, so a bad name is an error outcome and the child needs no import
    except Exception as e:  # ImportError, ValueError: the caller's mistake, reported per task
        return Outcome(task.key, False, None, f"cannot load {task.fn}: {type(e).__name__}: {e}", 0.0, "error")

    def child(send: Any) -> str:
        return json.dumps(fn(**task.args))  # JSON here: a value that is not JSON-able is this task's error

    return child


def _outcome(task: Task, text: Any, err: Any, seconds: float) -> Outcome:
    """The outcome of ``task`` from its child's result (JSON text) or :class:`~transpile.verify.proc.ChildError`."""
    if err is not None:
        error = err.message + (f"\n{err.output[-3000:]}" if err.kind == "error" and err.output else "")
        return Outcome(task.key, False, None, error, seconds, err.kind)
    return Outcome(task.key, True, json.loads(text), None, seconds)


def run_tasks(tasks: Iterable[Task], *, jobs: int = 1, timeout: float = 600.0, backend: str = "local",
              address: str | None = None, gpu: bool = False) -> Iterator[Outcome]:
    """Run ``tasks`` isolated, ``jobs`` at a time (local) or on Ray; yield outcomes as they complete.

    ``timeout``: seconds per task.  ``gpu``: tasks need the GPU stages (per task: ``Task.gpu``).
    Closing the iterator early cancels what has not started and kills what runs.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    items = list(tasks)
    preload(t.fn for t in items)
    if backend == "local":
        return _run_local(items, jobs, timeout, gpu)
    if backend == "ray":
        return _run_ray(items, jobs, timeout, gpu, address)
    raise ValueError(f"unknown backend {backend!r} (local or ray)")


def _run_local(tasks: list[Task], jobs: int, timeout: float, gpu: bool) -> Iterator[Outcome]:
    from transpile.verify.proc import POLL, Forked

    one_gpu = False
    if any(gpu if t.gpu is None else t.gpu for t in tasks):
        from transpile.verify import gpu as gpu_stages

        one_gpu = gpu_stages.detect().available  # in a helper process; the answer is inherited by the children

    def on_gpu(task: Task) -> bool:
        return one_gpu and (gpu if task.gpu is None else task.gpu)

    # NOTE: one thread forks and watches every child (module docstring): no pool threads.
    waiting = list(tasks)
    running: dict[Forked, tuple[Task, float]] = {}
    try:
        while waiting or running:
            gpu_busy = any(on_gpu(t) for t, _ in running.values())
            for task in list(waiting):  # in order; a GPU task waits for the GPU, CPU tasks after it go ahead
                if len(running) >= jobs:
                    break
                if gpu_busy and on_gpu(task):
                    continue
                waiting.remove(task)
                t0 = time.perf_counter()
                fn = _task_child(task)
                if isinstance(fn, Outcome):
                    yield fn
                    continue
                child = Forked(fn, timeout=timeout, what=f"task {task.key}", group=True)
                running[child] = (task, t0)  # before start: closed below even if the fork fails
                child.start()
                gpu_busy = gpu_busy or on_gpu(task)
            if not running:
                continue
            soonest = min(c.deadline for c in running) - time.monotonic()
            _wait([w for c in running for w in c.waitables()], max(0.0, min(soonest, POLL)))
            for child in [c for c in running if c.check()]:
                task, t0 = running.pop(child)
                child.close()
                yield _outcome(task, child.result, child.error, time.perf_counter() - t0)
    finally:  # closing the stream early: what runs is killed with its group, what waits never starts
        for child in running:
            child.close()


def import_ray() -> Any:
    """The ``ray`` module, or a clear error when the optional extra is missing."""
    try:
        import ray  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise TranspileError(None, "--backend ray needs Ray: pip install transpile[ray]") from None
    return ray


def _ray_task(task: Task, timeout: float) -> Outcome:
    """The body of one Ray task: the same isolation as the local backend, inside the Ray worker
    (a segfault kills the forked child, not the worker; a hang is killed at the timeout)."""
    return run_isolated(task, timeout)


def _run_ray(tasks: list[Task], jobs: int, timeout: float, gpu: bool, address: str | None) -> Iterator[Outcome]:
    ray = import_ray()
    if not ray.is_initialized():
        if address:
            ray.init(address=address)  # "auto", "HOST:6379" or a Ray Client "ray://HOST:10001"
        else:
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
    needs = [gpu if t.gpu is None else t.gpu for t in tasks]
    if any(needs) and not ray.cluster_resources().get("GPU", 0):
        raise TranspileError(None, "the Ray cluster has no GPU for the GPU stages (d)-(f): "
                                   "leave them out (--stages abc or --no-gpu) or add GPU nodes")
    remote = ray.remote(max_retries=0)(_ray_task)
    pending: dict[Any, Task] = {}
    for task, needs_gpu in zip(tasks, needs):
        ref = remote.options(num_cpus=1, num_gpus=1 if needs_gpu else 0, name=f"transpile:{task.key}"[:100])
        pending[ref.remote(task, timeout)] = task
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                task = pending.pop(ref)
                try:
                    yield ray.get(ref)
                except Exception as e:  # the Ray worker or node died, or the task was cancelled
                    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                    yield Outcome(task.key, False, None, f"the Ray task for {task.key} failed: "
                                                         f"{type(e).__name__}: {first}", 0.0, "crash")
    finally:
        for ref in pending:  # not force: a running task gets KeyboardInterrupt and kills its child's group
            ray.cancel(ref)


# ---------------------------------------------------------------------------
# Scoring CUDA submissions


def submission_file(cuda: str) -> Path:
    """``cuda`` written once under the verifier's cache, named by its content (so nvcc's cache hits
    when the same text comes again)."""
    from transpile.verify.reference import cache_file

    return cache_file("submissions", "sub", cuda)


def score_submission(*, id: str, reference: str, cuda: str | None = None, cuda_path: str | None = None,
                     function: str | None = None, stages: str = "abcdef", mode: str = "full",
                     seed: int | None = None, gpu: bool | None = None, sizes: dict[str, int] | None = None,
                     full_seeds: int | None = None, sim_timeout: float | None = None, include_dirs: tuple[str, ...] = (),
                     defines: tuple[str, ...] = (), report: bool = False, profile: bool = False) -> dict[str, Any]:
    """Verify one submission (``cuda`` text or a ``cuda_path``) against ``reference``: the task
    function of ``transpile evaluate`` (a JSON-able line; the full record under ``report`` when
    asked; the structural profile under ``profile`` when asked, docs/verify.md).  ``gpu`` False leaves out stages (d)-(f); ``sim_timeout`` bounds each CPU-simulator run,
    so a hang is reported as stage (c) [timeout] before the evaluator's own timeout kills the task."""
    from transpile.search import rewards
    from transpile.verify.stages import Options, verify_file

    if (cuda is None) == (cuda_path is None):
        raise ValueError(f"submission {id}: give exactly one of 'cuda' and 'cuda_path'")
    cu = Path(cuda_path) if cuda_path is not None else submission_file(str(cuda))
    opts = Options(seed=seed, mode=mode, stages="a" + stages.replace("a", ""), gpu=gpu, sizes=dict(sizes or {}),
                   full_seeds=full_seeds or (1 if mode == "quick" else 3), sanitizer=mode != "quick",
                   profile=profile)
    if sim_timeout is not None:
        opts.sim_timeout = sim_timeout
    rep = verify_file(cu, Path(reference), function=function, include_dirs=include_dirs, defines=defines,
                      options=opts)
    rec = rep.to_json()
    failure = rep.failure
    line: dict[str, Any] = {
        "id": id, "status": "scored", "verdict": rep.verdict, "ok": rep.ok, "reason": rep.reason,
        "stage": failure.key if failure is not None else None,
        "check": failure.check if failure is not None else None,
        "stages_reached": rec["stages_reached"], "stages_passed": rec["stages_passed"], "seed": rep.seed,
        "timing": rec["timing"],
        "rewards": {"stage": rewards.stage_reward(rec), "speed": rewards.speed_reward(rec)},
        "feedback": rep.summary(),
    }
    if report:
        line["report"] = rec
    if profile:
        line["profile"] = rec["profile"]
    return line


def unfinished(key: str, outcome: Outcome, timeout: float) -> dict[str, Any]:
    """The line for a submission whose isolated run did not finish (a hang, a crash, an error)."""
    why = {"timeout": f"the verification did not finish within {timeout:g} s (the submission may loop "
                      "forever, in a kernel or in the host code)",
           "crash": f"the verification crashed: {outcome.error}"}.get(outcome.status, f"evaluator error: "
                                                                                   f"{outcome.error}")
    return {"id": key, "status": outcome.status, "verdict": outcome.status, "ok": False,
            "reason": why.splitlines()[0], "stage": None, "check": None, "stages_reached": [],
            "stages_passed": [], "seed": None, "timing": {}, "rewards": {"stage": 0.0, "speed": 0.0},
            "feedback": why.splitlines()[0]}


def load_submissions(path: Path) -> list[dict[str, Any]]:
    """The submissions of a JSONL file, checked (``file:line:col: error:`` for the first bad line)."""
    subs, errors = read_submissions(path)
    if errors:
        raise errors[0][1]
    return subs


def read_submissions(path: Path) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], TranspileError]]]:
    """The well-formed submissions of a JSONL file, and for each bad line (not JSON, a missing or
    repeated id, a missing file, ...) its error record (:func:`error_record`) and diagnostic: one bad
    line does not stop the others.  A file that cannot be read at all is an error."""
    try:
        text = path.read_text(errors="surrogateescape")
    except OSError as e:
        raise TranspileError(None, f"cannot read '{path}': {e}") from None
    subs: list[dict[str, Any]] = []
    errors: list[tuple[dict[str, Any], TranspileError]] = []
    seen: set[str] = set()
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            subs.append(_submission(path, text, n, raw, seen))
        except TranspileError as e:
            sid = e.sid if isinstance(getattr(e, "sid", None), str) else f"line {n}"  # type: ignore[attr-defined]
            errors.append((error_record(sid, e.headline, n), e))
    return subs, errors


def error_record(sid: str, reason: str, line: int) -> dict[str, Any]:
    """The line of a submission that could not be scored (its line of the list was malformed)."""
    return {"id": sid, "status": "error", "verdict": "error", "ok": False, "reason": reason, "stage": None,
            "check": None, "stages_reached": [], "stages_passed": [], "seed": None, "timing": {},
            "rewards": {"stage": 0.0, "speed": 0.0}, "feedback": reason, "line": line, "seconds": 0.0}


def json_line(path: Path, text: str, n: int, raw: str, seen: set[str], *, shape: str, what: str
              ) -> tuple[dict[str, Any], str | int]:
    """Line ``n`` of a JSON-lines list: a JSON object (``shape`` in the message) with an ``id`` unique
    in ``seen`` (added to it); anything else is a ``file:line:col`` TranspileError."""
    where = Loc(str(path), n)
    try:
        item = json.loads(raw)
    except json.JSONDecodeError as e:
        raise TranspileError(Loc(str(path), n, e.colno), f"not JSON: {e.msg}", source=text) from None
    if not isinstance(item, dict):
        raise TranspileError(where, f"expected a JSON object {shape}")
    sid = item.get("id")
    if not isinstance(sid, (str, int)) or isinstance(sid, bool) or str(sid) in seen:
        raise TranspileError(where, f"each {what} needs a unique \"id\" (a string or an integer)")
    seen.add(str(sid))
    return item, sid


def _submission(path: Path, text: str, n: int, raw: str, seen: set[str]) -> dict[str, Any]:
    """Line ``n`` of the list as a submission; TranspileError (``sid`` set once the id is known)."""
    base = path.parent
    where = Loc(str(path), n)
    item, sid = json_line(path, text, n, raw, seen, shape="{\"id\", \"cuda\" or \"cuda_path\", \"reference\"}",
                          what="submission")

    def bad(msg: str) -> TranspileError:
        err = TranspileError(where, f"submission {sid}: {msg}")
        err.sid = str(sid)  # type: ignore[attr-defined]
        return err

    if ("cuda" in item) == ("cuda_path" in item):
        raise bad("give exactly one of \"cuda\" and \"cuda_path\"")
    for key in ("cuda", "cuda_path", "reference", "function"):
        if key in item and not isinstance(item[key], str):
            raise bad(f"\"{key}\" must be a string")
    if "reference" not in item:
        raise bad("missing \"reference\" (a .c or .ir path)")
    sub: dict[str, Any] = {"id": str(sid), "reference": str(base / item["reference"]),
                           "function": item.get("function")}
    if "cuda_path" in item:
        sub["cuda_path"] = str(base / item["cuda_path"])
    else:
        sub["cuda"] = item["cuda"]
    for key in ("reference", "cuda_path"):
        if key in sub and not Path(sub[key]).is_file():
            raise bad(f"{key} '{item[key]}': no such file")
    return sub

"""Fuzz the parallelization passes: random affine nests, shuffled vs sequential.

    python tests/fuzz_passes.py [N] [-j JOBS] [--seed S]     (default 10000 cases, 1 job)

Runs the property of tests/test_parallel_semantics.py (``affine_nests.check_case``:
the pipeline's output run with its ``par`` loops shuffled equals the input run
sequentially) on N generated kernels, split over JOBS worker processes.
Worker ``w`` draws its cases with Hypothesis seed ``S + w``, so workers do not
repeat each other and a run is reproducible from the seed it prints.  On a
miscompile (or a crash), Hypothesis shrinks the case and this prints the
minimal kernel in IR text form with its size and seed, then exits 1.  Stopped
by SIGTERM or SIGINT, it says how many cases ran without a miscompile.  The
last line is always ``fuzz: N cases, M miscompiles, T s``.

Needs numpy, hypothesis and the compiler's own dependencies; not pytest.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import queue
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, Verbosity, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests import affine_nests  # noqa: E402
from transpile import ir
from transpile.ir import text  # noqa: E402


def run_cases(n: int, hypothesis_seed: int, progress: Callable[[], None]) -> str | None:
    """Check ``n`` generated cases; None if all pass, else the report of the shrunk failure."""
    failures: list[str] = []

    @seed(hypothesis_seed)
    @settings(max_examples=n, deadline=None, database=None, verbosity=Verbosity.quiet,
              report_multiple_bugs=False, suppress_health_check=list(HealthCheck))
    @given(affine_nests.kernels(), st.integers(1, 5), st.integers(0, 2**16))
    def prop(k: ir.Kernel, size: int, data_seed: int) -> None:
        try:
            affine_nests.check_case(k, size, data_seed)
        except Exception as e:
            # Hypothesis runs the minimal failing case last, so failures[-1] is the shrunk one.
            failures.append(f"{type(e).__name__}: {e}\n"
                            f"size n={size} data seed={data_seed} (hypothesis seed {hypothesis_seed})\n"
                            f"{text.show(ir.Module((), (k,)))}")
            raise
        progress()

    try:
        prop()
    except Exception:
        return failures[-1] if failures else traceback.format_exc()
    return None


def _worker(w: int, n: int, hypothesis_seed: int, counts: object, results: mp.Queue) -> None:
    # The parent handles Ctrl-C and SIGTERM, and stops the workers with SIGTERM.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def progress() -> None:
        counts[w] += 1  # type: ignore[index]

    results.put((w, run_cases(n, hypothesis_seed, progress)))


class _Stop(BaseException):
    """SIGTERM or SIGINT: a BaseException, so neither Hypothesis nor the property takes it for a failure."""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=10_000, help="number of cases (default 10000)")
    ap.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--seed", type=int, default=None, help="Hypothesis seed of worker 0 (default: random)")
    args = ap.parse_args(argv)
    jobs = max(1, min(args.jobs, args.n))
    base = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    start = time.time()
    print(f"fuzz: {args.n} cases on {jobs} worker(s), hypothesis seeds {base}..{base + jobs - 1}", flush=True)

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    shares = [args.n // jobs + (w < args.n % jobs) for w in range(jobs)]
    failures: list[str] = []
    if jobs == 1:
        done = [0]
        try:
            report = run_cases(args.n, base, lambda: done.__setitem__(0, done[0] + 1))
        except _Stop:
            return _stopped(done[0], start)
        if report is not None:
            failures.append(report)
        return _finish(done[0], failures, start)

    ctx = mp.get_context("fork")  # workers inherit the imported compiler: no start-up cost
    counts = ctx.Array("q", jobs, lock=False)
    results: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(w, shares[w], base + w, counts, results), daemon=True)
             for w in range(jobs)]
    for p in procs:
        p.start()
    pending = set(range(jobs))
    try:
        while pending and not failures:
            try:
                w, report = results.get(timeout=0.5)
            except queue.Empty:
                for w in list(pending):
                    code = procs[w].exitcode
                    if code is not None:  # exited: its result may still be in flight
                        try:
                            w2, report = results.get(timeout=5)
                        except queue.Empty:
                            failures.append(f"worker {w} (hypothesis seed {base + w}) died, exit code {code}")
                            pending.discard(w)
                            break
                        pending.discard(w2)
                        if report is not None:
                            failures.append(report)
                        break
                continue
            pending.discard(w)
            if report is not None:
                failures.append(report)
    except _Stop:
        _end(procs, wait=False)
        return _stopped(sum(counts), start)
    _end(procs, wait=not failures)
    return _finish(sum(counts), failures, start)


def _end(procs: Sequence[BaseProcess], *, wait: bool) -> None:
    # Finished workers may still be flushing their result: give them a moment before SIGTERM.
    for p in procs:
        p.join(timeout=5 if wait else 0)
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join()


def _stopped(done: int, start: float) -> int:
    # Stopped early (timeout, Ctrl-C): say how far it got.
    print(f"stopped after {done} cases, no miscompile ({time.time() - start:.0f} s)")
    print(f"fuzz: {done} cases, 0 miscompiles, {time.time() - start:.0f} s", flush=True)
    return 0


def _finish(done: int, failures: list[str], start: float) -> int:
    for report in failures:
        print("MISCOMPILE (minimal example, after shrinking):")
        print(report)
    print(f"fuzz: {done} cases, {len(failures)} miscompiles, {time.time() - start:.0f} s", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The compiler's own cost: seconds and peak memory of ``transpile`` against the size of its input.

    python bench/compile_cost.py [--shapes chain,independent,loops] [--sizes 10,25,...]
                                 [--timeout S] [--mem-limit MB] [--no-polybench] [--per-file]

Generated and unrolled C is a common input (code generators, expanded macros), so the cost of
each pass must grow about linearly with the statements and loops of a function.  This script
times one ``transpile FILE.c --no-verify`` process per point, for three generated shapes of
``N`` statements (issue 43):

* ``chain``: one loop of N statements, each reading the previous one's result
  (``for (i) { t1[i] = a[i] * 2; t2[i] = t1[i] + 1; ... }``);
* ``independent``: one loop of N statements that read one array and each write their own;
* ``loops``: N one-statement loops, each writing its own array.

and then the 30 PolyBench kernels of ``tests/kernels`` in one call (``transpile *.c -o DIR``),
with ``--no-verify`` and with the default verification.  ``--per-file`` times one process per
kernel instead (what a compiler without several inputs per call costs; run the base commit's
code with ``PYTHONPATH=<its checkout>`` and this flag for the "before" figures).

Each point runs in a child process whose peak resident memory is read from ``wait4``'s
``ru_maxrss``; a point that runs past ``--timeout`` seconds (or past ``--mem-limit`` MB of
resident memory, polled every 0.2 s) is killed and printed as ``timeout`` (``memory``), and the
larger sizes of that shape are then skipped (``-``).  The machine is shared: rerun a point that
looks off.  The last column says how the run ended (``ok``, ``warning`` when the compiler
stopped a pass at its budget, ``error`` with its exit status).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (10, 25, 50, 100, 200, 500, 1000, 2000, 5000, 20000)


def chain(n: int) -> str:
    """One loop of ``n`` statements, each reading the previous statement's result."""
    params = ", ".join(["int n", "double a[n]"] + [f"double t{k}[n]" for k in range(1, n + 1)])
    body = ["    t1[i] = a[i] * 2.0;"] + [f"    t{k}[i] = t{k - 1}[i] + 1.0;" for k in range(2, n + 1)]
    return f"void kernel_chain({params})\n{{\n  for (int i = 0; i < n; i++) {{\n" + "\n".join(body) + "\n  }\n}\n"


def independent(n: int) -> str:
    """One loop of ``n`` statements that read ``a`` and each write their own array."""
    params = ", ".join(["int n", "double a[n]"] + [f"double b{k}[n]" for k in range(1, n + 1)])
    body = [f"    b{k}[i] = a[i] * {k}.0;" for k in range(1, n + 1)]
    return f"void kernel_independent({params})\n{{\n  for (int i = 0; i < n; i++) {{\n" + "\n".join(body) + \
        "\n  }\n}\n"


def loops(n: int) -> str:
    """``n`` one-statement loops, each writing its own array."""
    params = ", ".join(["int n", "double a[n]"] + [f"double b{k}[n]" for k in range(1, n + 1)])
    body = [f"  for (int i = 0; i < n; i++)\n    b{k}[i] = a[i] + {k}.0;" for k in range(1, n + 1)]
    return f"void kernel_loops({params})\n{{\n" + "\n".join(body) + "\n}\n"


SHAPES: dict[str, Callable[[int], str]] = {"chain": chain, "independent": independent, "loops": loops}


@dataclass(frozen=True)
class Point:
    """One timed child process."""

    seconds: float
    peak_mb: float
    outcome: str  # ok | warning | timeout | memory | error N
    cpu: float = 0.0  # user + system seconds of the child (what the load of a shared machine inflates least)

    def cells(self) -> tuple[str, str, str]:
        if self.outcome in ("timeout", "memory"):
            peak = f">{self.peak_mb:.0f}" if self.outcome == "memory" else f"{self.peak_mb:.0f}"
            return self.outcome, f"{self.cpu:.1f}", peak
        return f"{self.seconds:.2f}", f"{self.cpu:.2f}", f"{self.peak_mb:.0f}"


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measure(argv: Sequence[str], timeout: float, mem_limit_mb: float, cwd: Path) -> Point:
    """Run ``argv``; its wall time, peak RSS (MB) and how it ended."""
    start = time.perf_counter()
    proc = subprocess.Popen(list(argv), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stderr is not None
    os.set_blocking(proc.stderr.fileno(), False)
    err = b""
    killed = ""
    peak = 0.0
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        chunk = proc.stderr.read() or b""
        err += chunk[-65536:]
        if pid:
            break
        elapsed = time.perf_counter() - start
        peak = max(peak, _rss_mb(proc.pid))
        if not killed and (elapsed > timeout or peak > mem_limit_mb):
            killed = "timeout" if elapsed > timeout else "memory"
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.05 if elapsed < 2 else 0.2)
    proc.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - start
    peak = max(peak, usage.ru_maxrss / 1024)
    cpu = usage.ru_utime + usage.ru_stime
    if killed:
        return Point(seconds, peak, killed, cpu)
    if proc.returncode != 0:
        sys.stderr.write(err.decode(errors="replace")[-2000:])
        return Point(seconds, peak, f"error {proc.returncode}", cpu)
    return Point(seconds, peak, "warning" if b"pass-budget]" in err else "ok", cpu)  # [-Wpass-budget]


def _compile_argv(files: Sequence[Path], out: Path, verify: bool, extra: Sequence[str]) -> list[str]:
    argv = [sys.executable, "-c", "from transpile.cli import main; main()", *map(str, files)]
    argv += ["-o", str(out if len(files) > 1 else out / (files[0].stem + ".cu"))]
    return argv + ([] if verify else ["--no-verify"]) + list(extra)


def shapes_table(shapes: Sequence[str], sizes: Sequence[int], timeout: float, mem_limit: float,
                 extra: Sequence[str], tmp: Path) -> None:
    print(f"{'shape':<12} {'N':>6} {'seconds':>9} {'cpu s':>8} {'peak MB':>8}  outcome", flush=True)
    for shape in shapes:
        stop = ""
        for n in sizes:
            if stop:
                print(f"{shape:<12} {n:>6} {'-':>9} {'-':>8} {'-':>8}  not run ({stop} at a smaller N)", flush=True)
                continue
            src = tmp / f"{shape}_{n}.c"
            src.write_text(SHAPES[shape](n))
            p = measure(_compile_argv([src], tmp, False, extra), timeout, mem_limit, ROOT)
            seconds, cpu, peak = p.cells()
            print(f"{shape:<12} {n:>6} {seconds:>9} {cpu:>8} {peak:>8}  {p.outcome}", flush=True)
            if p.outcome in ("timeout", "memory"):
                stop = p.outcome


def polybench_table(per_file: bool, timeout: float, mem_limit: float, extra: Sequence[str], tmp: Path) -> None:
    kernels = sorted((ROOT / "tests" / "kernels").glob("*.c"))
    print(f"\n{'PolyBench, ' + str(len(kernels)) + ' kernels':<28} {'seconds':>9} {'cpu s':>8} {'peak MB':>8}  outcome")
    for verify in (False, True):
        label = ("verified" if verify else "--no-verify") + (", one process a file" if per_file else ", one call")
        out = tmp / ("pv" if verify else "pn")
        out.mkdir(exist_ok=True)
        if per_file:
            points = [measure(_compile_argv([k], out, verify, extra), timeout, mem_limit, ROOT) for k in kernels]
            bad = [p.outcome for p in points if p.outcome not in ("ok", "warning")]
            point = Point(sum(p.seconds for p in points), max(p.peak_mb for p in points),
                          bad[0] if bad else "ok", sum(p.cpu for p in points))
        else:
            point = measure(_compile_argv(kernels, out, verify, extra), timeout * len(kernels), mem_limit, ROOT)
        seconds, cpu, peak = point.cells()
        print(f"{label:<28} {seconds:>9} {cpu:>8} {peak:>8}  {point.outcome}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: chain, independent, loops")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated statement counts")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per point (default 600)")
    ap.add_argument("--mem-limit", type=float, default=8192.0, help="MB of resident memory per point (default 8192)")
    ap.add_argument("--no-polybench", action="store_true", help="skip the PolyBench rows")
    ap.add_argument("--no-shapes", action="store_true", help="skip the generated shapes")
    ap.add_argument("--per-file", action="store_true", help="PolyBench: one process per kernel")
    ap.add_argument("--extra", default="", help="more transpile options, space-separated (e.g. '--naive')")
    ap.add_argument("--write", type=Path, default=None, metavar="DIR", help="only write the shapes' C files to DIR")
    args = ap.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if unknown := set(shapes) - set(SHAPES):
        ap.error(f"unknown shapes: {', '.join(sorted(unknown))}")
    if args.write is not None:
        args.write.mkdir(parents=True, exist_ok=True)
        for shape in shapes:
            for n in sizes:
                (args.write / f"{shape}_{n}.c").write_text(SHAPES[shape](n))
        return 0
    extra = args.extra.split()
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
          f"transpile from {os.environ.get('PYTHONPATH') or 'the installed package'}", flush=True)
    with tempfile.TemporaryDirectory(prefix="compile_cost.") as d:
        tmp = Path(d)
        if not args.no_shapes:
            shapes_table(shapes, sizes, args.timeout, args.mem_limit, extra, tmp)
        if not args.no_polybench:
            polybench_table(args.per_file, args.timeout, args.mem_limit, extra, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())

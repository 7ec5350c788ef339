"""Compile the 30 real PolyBench/C 4.2.1 files as a user does and print a table.

    python bench/real_polybench.py [--size LARGE] [-k gemm,lu] [--polybench DIR] [--transpile CMD]

Each file is compiled from inside the PolyBench directory with
``transpile FILE.c -I utilities -I <dir> -D <SIZE>_DATASET --function kernel_<name> -o OUT.cu``
(default verification).  Printed per kernel: exit status, wall seconds, the
number of warnings, whether an output was written, and the verifier's verdict
line (``transpile: verified ...`` / ``not verified ...``, which names the shapes stage
(c) tested).  The PolyBench files are read from ``../shared/side_by_side/polybench``
beside the checkout (or ``--polybench``); nothing is copied.
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def polybench_dir(given: str | None = None) -> Path | None:
    """The real PolyBench tree: ``given``, else ``../shared/side_by_side/polybench`` beside the checkout
    (or beside the main checkout of a git worktree)."""
    cands = [Path(given)] if given else [ROOT.parent / "shared" / "side_by_side" / "polybench",
                                          ROOT.parent.parent / "shared" / "side_by_side" / "polybench"]
    return next((c for c in cands if (c / "utilities" / "benchmark_list").is_file()), None)


def kernels(pb: Path) -> list[tuple[str, Path, str]]:
    """``(name, file relative to pb, function)`` of every benchmark in PolyBench's own list."""
    out = []
    for line in (pb / "utilities" / "benchmark_list").read_text().split():
        rel = Path(line.strip().lstrip("./"))
        text = (pb / rel).read_text()
        m = re.search(r"\bvoid\s+(kernel_\w+)\s*\(", text)
        assert m, rel
        out.append((rel.stem, rel, m.group(1)))
    return out


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def compile_one(pb: Path, rel: Path, function: str, out: Path, size: str, cmd: list[str],
                extra: tuple[str, ...] = ()) -> tuple[int, float, float, str]:
    """Exit status, wall seconds, CPU seconds (the compile and every process it started) and stderr."""
    argv = [*cmd, str(rel), "-I", "utilities", "-I", str(rel.parent), "-D", f"{size}_DATASET",
            "--function", function, "-o", str(out), *extra]
    t0, c0 = time.perf_counter(), _children_cpu()
    proc = subprocess.run(argv, cwd=pb, capture_output=True, text=True, timeout=1800)
    return proc.returncode, time.perf_counter() - t0, _children_cpu() - c0, proc.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="LARGE")
    ap.add_argument("-k", "--kernels", default="")
    ap.add_argument("--polybench", default=None)
    ap.add_argument("--transpile", default="transpile", help="the command (default: transpile on PATH)")
    ap.add_argument("--verbose", action="store_true", help="print each compile's stderr")
    a = ap.parse_args()
    pb = polybench_dir(a.polybench)
    if pb is None:
        print("no PolyBench tree (../shared/side_by_side/polybench)", file=sys.stderr)
        return 2
    want = set(a.kernels.split(",")) - {""}
    print("| kernel | rc | wall s | cpu s | warnings | output | verdict |\n|---|---|---|---|---|---|---|")
    total = cpu_total = 0.0
    with tempfile.TemporaryDirectory() as d:
        for name, rel, function in kernels(pb):
            if want and name not in want:
                continue
            out = Path(d) / f"{name}.cu"
            rc, secs, cpu, err = compile_one(pb, rel, function, out, a.size, a.transpile.split())
            total += secs
            cpu_total += cpu
            warnings = len(re.findall(r"\bwarning: ", err))
            verdict = next((ln.split("transpile: ", 1)[1] for ln in err.splitlines()
                            if re.search(r"^transpile: ('\w+' (verified|fail|inconclusive|unverified)|"
                                         r"warning: generated CUDA)", ln)), "")
            if not verdict and rc:
                verdict = (err.strip().splitlines() or ["?"])[0]
            print(f"| {name} | {rc} | {secs:.1f} | {cpu:.1f} | {warnings} | {'yes' if out.exists() else 'no'} | "
                  f"{verdict[:300]} |", flush=True)
            if a.verbose:
                print(err, file=sys.stderr)
    print(f"\ntotal {total:.0f} s wall, {cpu_total:.0f} s cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())

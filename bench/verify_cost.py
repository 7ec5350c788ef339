"""The verifier's cost per stage on the 30 PolyBench kernels (tests/kernels/*.c), CPU stages only.

Each kernel is compiled as ``transpile --no-verify`` compiles it (front end, lowering, CUDA
emission, in process), written to a file, and verified with ``verify_file`` on the CPU stages
(``--stages abc``, no GPU; stage (b) is skipped where nvcc is absent), at the mode the compile
command uses (``quick``) unless ``--mode full``.  A table of seconds per stage, the seed, and the
verdict per kernel is printed; the total and the machine's load average at the end.

    PYTHONPATH=. python bench/verify_cost.py [--mode quick|full] [--seed S] [-k gemm] [--repeat 2]

With ``--repeat N`` each kernel is verified N times and the fastest is shown (the first run
builds the simulator library and the gcc references into the cache; later runs reuse them).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="quick", choices=("quick", "full"))
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("-k", dest="only", default=None, help="only kernels whose name contains this")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()

    from transpile import cuda, frontend, pipeline
    from transpile.verify import Options, verify_file

    paths = sorted((ROOT / "tests" / "kernels").glob("*.c"))
    if args.only:
        paths = [p for p in paths if args.only in p.stem]
    out = Path(tempfile.mkdtemp(prefix="verify-cost-"))
    print(f"verify cost, mode {args.mode}, seed {args.seed}, stages abc, no GPU, best of {args.repeat}")
    print(f"{'kernel':<16} {'a':>7} {'b':>7} {'c':>8} {'total':>8}  verdict")
    tot = {"a": 0.0, "b": 0.0, "c": 0.0, "total": 0.0}
    for path in paths:
        module = frontend.load(path)
        text = cuda.emit(pipeline.lower(module), source=path.name)
        cu = out / f"{path.stem}.cu"
        cu.write_text(text)
        best: dict[str, float] | None = None
        verdict = "?"
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            report = verify_file(cu, path, options=Options(seed=args.seed, mode=args.mode, stages="abc", gpu=False))
            wall = time.perf_counter() - t0
            row = {k: report.stage(k).seconds or 0.0 for k in "abc"} | {"total": wall}
            verdict = report.verdict
            if best is None or row["total"] < best["total"]:
                best = row
        assert best is not None
        for k in tot:
            tot[k] += best[k]
        print(f"{path.stem:<16} {best['a']:7.2f} {best['b']:7.2f} {best['c']:8.2f} {best['total']:8.2f}  {verdict}",
              flush=True)
    print(f"{'total':<16} {tot['a']:7.2f} {tot['b']:7.2f} {tot['c']:8.2f} {tot['total']:8.2f}")
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())

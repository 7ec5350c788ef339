"""Cost of the simulator's race detector (transpile/sim/include/cuda_sim_race.h) on emitted kernels.

Builds each PolyBench kernel's emitted CUDA for the simulator (with the verifier's audit header, as
stage (c) does), then times one drop-in call at n with the detector on and off in the same process,
and prints a table.  Usage: python bench/sim_race_cost.py [--n 127] [kernel ...]  (default: gemm).
"""

from __future__ import annotations

import argparse
import ctypes
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", nargs="*", default=["gemm"])
    ap.add_argument("--n", type=int, default=127)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    from transpile.sim import SimLibrary
    from transpile.verify.simstage import build_sim

    print("| kernel | n | race check off (s) | on (s) | ratio |")
    print("|---|---|---|---|---|")
    tmp = Path(tempfile.mkdtemp(prefix="race-cost-"))
    for name in args.kernels:
        src = ROOT / "tests" / "kernels" / f"{name}.c"
        cu = tmp / f"{name}.cu"
        subprocess.run(["transpile", str(src), "--no-verify", "-o", str(cu)], check=True)
        b = build_sim(cu)
        lib = SimLibrary(b)
        lib.set_quiet(True)
        n = args.n
        A, B, C = (np.random.rand(n, n) for _ in range(3))
        fn = f"kernel_{name}"
        times = {}
        for on in (0, 1, 0, 1):
            lib.lib.__getattr__("__sim_set_race_check")(ctypes.c_int(on))
            best = 1e9
            for _ in range(args.reps):
                t = time.perf_counter()
                lib.call(fn, n, n, n, 1.5, 1.2, C, A, B)
                best = min(best, time.perf_counter() - t)
            times[on] = best
        print(f"| {name} | {n} | {times[0]:.3f} | {times[1]:.3f} | {times[1] / times[0]:.2f} |")


if __name__ == "__main__":
    main()

"""Vendor-library times of the factorizations and solves of issue 45, for the table beside transpile's.

On the GPU machine (cupy: cuSOLVER and cuBLAS), at the size issue 45 names (n = 4000, fp64), one
process, CUDA events, median of ``--reps`` calls after one warm-up call:

* cholesky: ``cupy.linalg.cholesky`` (cuSOLVER DPOTRF) of an SPD matrix;
* lu: ``cupyx.scipy.linalg.lu_factor`` (cuSOLVER DGETRF, partial pivoting: more work than
  PolyBench's unpivoted lu, so a fair floor);
* ludcmp: ``lu_factor`` then ``lu_solve`` (DGETRF + DGETRS);
* trisolv: ``cupyx.scipy.linalg.solve_triangular`` of one right-hand side (cuBLAS DTRSM with one
  column: the library's triangular solve);
* gramschmidt: ``cupy.linalg.qr`` in ``reduced`` mode (cuSOLVER DGEQRF + DORGQR), m x n as
  PolyBench's EXTRALARGE gramschmidt.

Prints a markdown table (and ``--json FILE``: the records).  Compare with ``bench/gpu.py``'s
``NAME_device`` times of the same run.

    python3 bench/vendor.py [--n 4000] [--reps 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable


def _time(fn: Callable[[], object], reps: int) -> float:
    import cupy as cp

    fn()  # warm-up: handles, workspaces, modules
    cp.cuda.Device().synchronize()
    out = []
    for _ in range(reps):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--qr-m", type=int, default=2600, help="gramschmidt's rows (PolyBench EXTRALARGE M)")
    ap.add_argument("--qr-n", type=int, default=3000, help="gramschmidt's columns (PolyBench EXTRALARGE N)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    import cupy as cp
    from cupyx.scipy import linalg as cl

    rng = cp.random.default_rng(0)
    n = a.n
    m = rng.standard_normal((n, n), dtype=cp.float64)
    spd = m @ m.T + n * cp.eye(n)
    dominant = m + 2 * n * cp.eye(n)
    lower = cp.tril(m) + n * cp.eye(n)
    b = rng.standard_normal(n, dtype=cp.float64)
    q = rng.standard_normal((a.qr_m, a.qr_n), dtype=cp.float64)
    cases: list[tuple[str, str, Callable[[], object]]] = [
        ("cholesky", "cuSOLVER DPOTRF (cupy.linalg.cholesky)", lambda: cp.linalg.cholesky(spd)),
        ("lu", "cuSOLVER DGETRF (lu_factor)", lambda: cl.lu_factor(dominant, overwrite_a=False, check_finite=False)),
        ("ludcmp", "DGETRF + DGETRS (lu_factor, lu_solve)",
         lambda: cl.lu_solve(cl.lu_factor(dominant, check_finite=False), b, check_finite=False)),
        ("trisolv", "cuBLAS DTRSM, one column (solve_triangular)",
         lambda: cl.solve_triangular(lower, b, lower=True, check_finite=False)),
        ("gramschmidt", f"cuSOLVER DGEQRF + DORGQR, {a.qr_m}x{a.qr_n} (cupy.linalg.qr)",
         lambda: cp.linalg.qr(q, mode="reduced")),
    ]
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"# vendor libraries on {name}, n = {n}, fp64, median of {a.reps} after a warm-up call")
    print("| kernel | library routine | seconds |")
    print("|---|---|---:|")
    records = []
    for kernel, routine, fn in cases:
        try:
            s = _time(fn, a.reps)
        except Exception as exc:  # a routine this cupy lacks: say so, time the rest
            print(f"| {kernel} | {routine} | failed: {type(exc).__name__}: {exc} |", flush=True)
            continue
        records.append({"kernel": kernel, "routine": routine, "n": n, "seconds": s, "device": name})
        print(f"| {kernel} | {routine} | {s:.6f} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()

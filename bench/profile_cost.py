"""The structural profile's cost against stage (c)'s, on the PolyBench kernels (tests/kernels/*.c).

Each kernel is compiled as ``transpile --no-verify`` compiles it (front end, lowering, CUDA emission,
in process), written to a file and verified on the CPU stages (``--stages abc``, no GPU) at
``--mode`` (``full``, what ``transpile verify`` runs, by default); then the profile of the accepted
candidate (transpile/verify/profile.py: one in-order call at stage (c)'s largest shape, with the
simulator's recording on) is timed again on its own.  Acceptance (issue 44): profile <= 2 x stage (c).
A table of seconds per kernel (stage (c), profile, ratio), the profile's headline figures, the
total and the machine's load average at the end.

    PYTHONPATH=. python bench/profile_cost.py [--mode quick|full] [--seed S] [-k gemm] [--repeat 2]

With ``--repeat N`` the profile is timed N times and the fastest is shown (stage (c) once: its
library is then in the cache, which the profile reuses as ``transpile verify --profile`` does).
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
    """Run the table; exit status 1 when some kernel's profile cost more than twice its stage (c)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="full", choices=("quick", "full"))
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("-k", dest="only", default=None, help="only kernels whose name contains this (comma list)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()

    from transpile import cuda, frontend, pipeline
    from transpile.search.rewards import structural_reward
    from transpile.verify import Options, verify_file
    from transpile.verify.profile import run_profile

    paths = sorted((ROOT / "tests" / "kernels").glob("*.c"))
    if args.only:
        keys = args.only.split(",")
        paths = [p for p in paths if any(k in p.stem for k in keys)]
    out = Path(tempfile.mkdtemp(prefix="profile-cost-"))
    print(f"profile cost, mode {args.mode}, seed {args.seed}, stages abc, no GPU, profile best of {args.repeat}")
    print(f"{'kernel':<16} {'c (s)':>8} {'prof (s)':>8} {'ratio':>6}  {'shape':<14} {'sect/req':>8} "
          f"{'sect.eff':>8} {'replays':>7} {'diverg':>6} {'occ':>5} {'reward':>6}")
    tot_c = tot_p = 0.0
    worst = 0.0
    for path in paths:
        module = frontend.load(path)
        text = cuda.emit(pipeline.lower(module), source=path.name)
        cu = out / f"{path.stem}.cu"
        cu.write_text(text)
        report = verify_file(cu, path, options=Options(seed=args.seed, mode=args.mode, stages="abc", gpu=False,
                                                       profile=True))
        c = report.stage("c").seconds or 0.0
        if report.verdict != "pass" or report.profile_input is None:
            print(f"{path.stem:<16} {c:8.2f} {'-':>8}  {report.verdict}: {report.reason[:60]}")
            continue
        library, inputs, shape, _ = report.profile_input
        sig = report_sig(cu, path)
        best = None
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            run_profile(report, library, sig, inputs, shape)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        assert best is not None
        prof = report.profile or {}
        o = prof.get("overall") or {}
        ratio = best / c if c else float("inf")
        worst = max(worst, ratio)
        tot_c += c
        tot_p += best

        def f(v: object, w: int, d: int = 2) -> str:
            return f"{v:{w}.{d}f}" if isinstance(v, (int, float)) else f"{'-':>{w}}"

        reward = structural_reward({"verdict": "pass", "profile": prof}) if prof else None
        print(f"{path.stem:<16} {c:8.2f} {best:8.2f} {ratio:6.2f}  {shape:<14} {f(o.get('sectors_per_request'), 8)} "
              f"{f(o.get('sector_efficiency'), 8)} {f(o.get('replays_per_shared_access'), 7)} "
              f"{f(o.get('divergent_fraction'), 6)} {f(o.get('occupancy'), 5)} {f(reward, 6, 3)}")
        sys.stdout.flush()
    print(f"{'total':<16} {tot_c:8.2f} {tot_p:8.2f} {tot_p / tot_c if tot_c else 0:6.2f}  (worst ratio {worst:.2f})")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    return 0 if worst <= 2.0 else 1


def report_sig(cu: Path, reference: Path) -> object:
    """The reference's signature as stage (a) reads it (the profiled call's arguments)."""
    from transpile.verify.report import Report
    from transpile.verify.stages import stage_a

    rep = Report(kernel="?", candidate=str(cu), reference=str(reference), seed=0)
    target = stage_a(rep, cu=cu, module=None, reference_path=reference, function=None, include_dirs=(),
                     defines=(), lowered=None)
    assert target is not None, rep.reason
    return target.sig


if __name__ == "__main__":
    sys.exit(main())

"""The structural profile (CPU, transpile/verify/profile.py) against the GPU: Nsight Compute's
counters, and the structural reward's ranking against measured time (issue 44, item 3).

Two parts, both run on a machine with a GPU, nvcc and ``ncu`` (``--clock-control none`` runs on the
lent machines); neither has been run yet.

    # 1. ncu: for each candidate (the pairs of tests/profile_pairs and the PolyBench kernels as
    #    transpile emits them, >= 10 kernels), the CPU profile at stage (c)'s last shape, then the same
    #    call on the GPU under ncu on the same inputs; a table per kernel and rank correlations.
    python bench/profile_vs_ncu.py ncu --out /tmp/pvn [-k gemm,atax] [--polybench 8]
    # 2. tau: the schedule candidates of bench/evolve.py --generate, timed by bench/gpu.py: per kernel,
    #    Kendall tau between the structural reward (higher better) and the measured time (lower
    #    better), next to the cost model's tau (its recorded estimates).
    python bench/profile_vs_ncu.py tau --cu-dir bench/cu-evolve --timings evolve.jsonl [--out F.md]

Part 1's counters (Nsight Compute metric names, sm_90):

* sectors per request, global: ``l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}.sum`` over
  ``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}.sum``, against ``coalescing.sectors_per_request``;
* shared bank conflicts: ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st}.sum`` over
  ``smsp__inst_executed_op_shared_{ld,st}.sum``, against ``bank_conflicts.replays_per_access``;
* branch efficiency: ``smsp__sass_average_branch_targets_threads_uniform.pct`` / 100, against
  1 - ``divergence.fraction`` (the CPU's per-site lane participation);
* occupancy: ``sm__maximum_warps_per_active_cycle_pct`` (theoretical) and
  ``sm__warps_active.avg.pct_of_peak_sustained_active`` (achieved), against ``occupancy.occupancy``.

Agreement is reported per metric as the mean absolute difference and Kendall's tau over kernels.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAIRS = ROOT / "tests" / "profile_pairs"
METRICS = (
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "smsp__inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_st.sum",
    "smsp__sass_average_branch_targets_threads_uniform.pct",
    "sm__maximum_warps_per_active_cycle_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
    "gpu__time_duration.sum",
)

DRIVER = '''
import ctypes, pickle, sys
sys.path.insert(0, {root!r})
from transpile.verify.reference import call_dropin
sig, inputs = pickle.load(open(sys.argv[2], "rb"))
lib = ctypes.CDLL(sys.argv[1])
arrays = {{a.name: inputs[a.name].copy() for a in sig.arrays}}
ptrs = {{n: ctypes.c_void_p(x.ctypes.data) for n, x in arrays.items()}}
call_dropin(lib[sig.name], sig, {{**inputs, **arrays}}, ptrs)
'''


def kendall_tau(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Kendall's tau-b of two equally long sequences; None with fewer than 2 pairs or no variation."""
    n = len(xs)
    conc = disc = tx = ty = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = xs[i] - xs[j], ys[i] - ys[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                tx += 1
            elif dy == 0:
                ty += 1
            elif (dx > 0) == (dy > 0):
                conc += 1
            else:
                disc += 1
    denom = math.sqrt((conc + disc + tx) * (conc + disc + ty))
    return (conc - disc) / denom if denom else None


def candidates(polybench: int, only: Sequence[str]) -> list[tuple[str, Path, Path]]:
    """(name, .cu, reference) for the pair kernels and the first ``polybench`` PolyBench kernels."""
    out = []
    for cu in sorted(PAIRS.glob("*.cu")):
        out.append((cu.stem, cu, PAIRS / f"{cu.stem.split('_')[0]}.c"))
    from transpile import cuda, frontend, pipeline

    tmp = Path(tempfile.mkdtemp(prefix="pvn-emit-"))
    for ref in sorted((ROOT / "tests" / "kernels").glob("*.c"))[:polybench]:
        cu = tmp / f"{ref.stem}.cu"
        cu.write_text(cuda.emit(pipeline.lower(frontend.load(ref)), source=ref.name))
        out.append((ref.stem, cu, ref))
    return [c for c in out if not only or any(k in c[0] for k in only)]


def profile_on_cpu(cu: Path, ref: Path, seed: int) -> tuple[dict[str, Any], Any, dict[str, Any]] | None:
    """(the record with its profile, the signature, the profiled inputs), None when not accepted."""
    from transpile.verify import Options, verify_file
    from transpile.verify.report import Report
    from transpile.verify.stages import stage_a

    rep = verify_file(cu, ref, options=Options(seed=seed, mode="full", stages="abc", gpu=False, profile=True))
    if rep.verdict != "pass" or rep.profile is None or rep.profile_input is None:
        print(f"{cu.name}: {rep.verdict}: {rep.reason}", file=sys.stderr)
        return None
    r2 = Report(kernel="?", candidate=str(cu), reference=str(ref), seed=seed)
    target = stage_a(r2, cu=cu, module=None, reference_path=ref, function=None, include_dirs=(), defines=(),
                     lowered=None)
    assert target is not None
    return rep.to_json(), target.sig, rep.profile_input[1]


def ncu_counters(cu: Path, sig: Any, inputs: dict[str, Any], work: Path) -> dict[str, dict[str, float]]:
    """Nsight Compute's METRICS per kernel (summed over its launches; percentages averaged) for one call
    of the drop-in built by nvcc, on ``inputs``."""
    lib = work / f"lib{cu.stem}.so"
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", str(lib), str(cu)],
                   check=True)
    data = work / f"{cu.stem}.pkl"
    data.write_bytes(pickle.dumps((sig, inputs)))
    driver = work / "driver.py"
    driver.write_text(DRIVER.format(root=str(ROOT)))
    proc = subprocess.run(["ncu", "--clock-control", "none", "--csv", "--metrics", ",".join(METRICS),
                           sys.executable, str(driver), str(lib), str(data)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    text = proc.stdout[proc.stdout.find('"ID"'):]
    per: dict[str, dict[str, list[float]]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        name = row.get("Kernel Name", "?").split("(")[0]
        try:
            v = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        per.setdefault(name, {}).setdefault(row["Metric Name"], []).append(v)
    out: dict[str, dict[str, float]] = {}
    for name, ms in per.items():
        out[name] = {m: (sum(v) / len(v) if m.endswith("pct") else sum(v)) for m, v in ms.items()}
    return out


def _div(a: float, b: float) -> float | None:
    return a / b if b else None


def gpu_figures(c: dict[str, float]) -> dict[str, float | None]:
    """The GPU's counterparts of the profile's figures from one kernel's counters."""
    g = lambda m: c.get(m, 0.0)  # noqa: E731
    req = g(METRICS[1]) + g(METRICS[3])
    shared = g("smsp__inst_executed_op_shared_ld.sum") + g("smsp__inst_executed_op_shared_st.sum")
    conflicts = (g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
                 + g("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"))
    return {"sectors_per_request": _div(g(METRICS[0]) + g(METRICS[2]), req),
            "replays_per_access": _div(conflicts, shared),
            "branch_efficiency": g("smsp__sass_average_branch_targets_threads_uniform.pct") / 100,
            "theoretical_occupancy": g("sm__maximum_warps_per_active_cycle_pct") / 100,
            "achieved_occupancy": g("sm__warps_active.avg.pct_of_peak_sustained_active") / 100,
            "ms": g("gpu__time_duration.sum") / 1e6}


def cpu_figures(k: dict[str, Any]) -> dict[str, float | None]:
    """The profile's figures of one kernel, named as :func:`gpu_figures`."""
    div = k["divergence"]["fraction"]
    occ = k.get("occupancy") or {}
    return {"sectors_per_request": k["coalescing"]["sectors_per_request"],
            "replays_per_access": k["bank_conflicts"]["replays_per_access"],
            "branch_efficiency": None if div is None else 1 - div,
            "theoretical_occupancy": occ.get("occupancy"), "achieved_occupancy": occ.get("occupancy")}


def run_ncu(args: argparse.Namespace) -> int:
    """Part 1: the table and the agreement per metric."""
    if not shutil.which("ncu") or not shutil.which("nvcc"):
        print("profile_vs_ncu ncu: needs ncu and nvcc on PATH (a GPU machine)", file=sys.stderr)
        return 2
    work = Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, cu, ref in candidates(args.polybench, args.only.split(",") if args.only else ()):
        got = profile_on_cpu(cu, ref, args.seed)
        if got is None:
            continue
        rec, sig, inputs = got
        counters = ncu_counters(cu, sig, inputs, work)
        for k in rec["profile"]["kernels"]:
            base = k["kernel"].split("<")[0]
            c = next((v for n, v in counters.items() if n.split("<")[0].split("::")[-1] == base), None)
            if c is None:
                continue
            rows.append({"candidate": name, "kernel": k["kernel"], "cpu": cpu_figures(k), "gpu": gpu_figures(c)})
    (work / "profile_vs_ncu.json").write_text(json.dumps(rows, indent=1))
    keys = ("sectors_per_request", "replays_per_access", "branch_efficiency", "theoretical_occupancy",
            "achieved_occupancy")
    print(f"{'candidate':<20} {'kernel':<24} " + " ".join(f"{k[:14]:>15}" for k in keys))
    for r in rows:
        cells = []
        for k in keys:
            a, b = r["cpu"].get(k), r["gpu"].get(k)
            cells.append(f"{'-' if a is None else f'{a:.2f}':>6}/{'-' if b is None else f'{b:.2f}':<8}")
        print(f"{r['candidate']:<20} {r['kernel'][:24]:<24} " + " ".join(cells))
    print(f"\n{len(rows)} kernels; cpu/gpu above; agreement per metric:")
    for k in keys:
        pairs = [(r["cpu"][k], r["gpu"][k]) for r in rows if r["cpu"].get(k) is not None and r["gpu"].get(k) is not None]
        if len(pairs) < 2:
            print(f"  {k}: fewer than 2 kernels")
            continue
        mad = sum(abs(a - b) for a, b in pairs) / len(pairs)
        tau = kendall_tau([a for a, _ in pairs], [b for _, b in pairs])
        print(f"  {k}: n={len(pairs)} mean |cpu - gpu| {mad:.3f}, Kendall tau {tau if tau is None else round(tau, 3)}")
    return 0


def run_tau(args: argparse.Namespace) -> int:
    """Part 2: Kendall tau of the structural reward and of the cost model against measured time."""
    sys.path.insert(0, str(ROOT / "bench"))
    import evolve as E  # bench/evolve.py: the manifest and the timings' format

    from transpile.search.rewards import structural_reward

    cu_dir = Path(args.cu_dir)
    manifest = json.loads((cu_dir / "evolve.json").read_text())
    times = E.measured(Path(args.timings))
    lines = ["| kernel | candidates | tau structural | tau cost model |", "|---|---|---|---|"]
    all_s: list[float] = []
    all_m: list[float] = []
    for k, entry in sorted(manifest["kernels"].items()):
        variants = entry.get("variants") or {}
        model = {v: t.get("model_ms") for t in entry.get("trials", []) for name, v in variants.items()
                 if t["schedule"] == name}
        rows = []
        for v in variants.values():
            ms = E.relative(times, k, v)
            cu = cu_dir / (f"{E.stem(k)}.cu" if v == "default" else f"{E.stem(k)}.{v}.cu")
            if ms is None or not cu.exists():
                continue
            got = profile_on_cpu(cu, ROOT / "tests" / "kernels" / f"{E.stem(k)}.c", args.seed)
            reward = structural_reward(got[0]) if got else None
            if reward is not None:
                rows.append((ms, reward, model.get(v)))
        if len(rows) < 3:
            continue
        tau_s = kendall_tau([-r for _, r, _ in rows], [t for t, _, _ in rows])
        with_model = [(t, m) for t, _, m in rows if m]
        tau_m = kendall_tau([m for _, m in with_model], [t for t, _ in with_model]) if len(with_model) >= 3 else None
        if tau_s is not None:
            all_s.append(tau_s)
        if tau_m is not None:
            all_m.append(tau_m)
        fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
        lines.append(f"| {k} | {len(rows)} | {fmt(tau_s)} | {fmt(tau_m)} |")
    mean = lambda xs: f"{sum(xs) / len(xs):.2f}" if xs else "-"  # noqa: E731
    lines.append(f"| mean | {len(all_s)} kernels | {mean(all_s)} | {mean(all_m)} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


def main() -> int:
    """Parse the command line and run one part."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="part", required=True)
    a = sub.add_parser("ncu", help="the profile against Nsight Compute's counters")
    a.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "profile-vs-ncu"))
    a.add_argument("-k", dest="only", default=None, help="only candidates whose name contains one of these")
    a.add_argument("--polybench", type=int, default=8, help="PolyBench kernels besides the 8 pairs")
    a.add_argument("--seed", type=int, default=2024)
    b = sub.add_parser("tau", help="Kendall tau of the structural reward and the cost model against time")
    b.add_argument("--cu-dir", required=True, help="bench/evolve.py --generate's directory (evolve.json)")
    b.add_argument("--timings", required=True, help="bench/gpu.py's JSONL of those builds")
    b.add_argument("--out", default=None)
    b.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    return run_ncu(args) if args.part == "ncu" else run_tau(args)


if __name__ == "__main__":
    sys.exit(main())

"""The schedule search over the 30 kernels: candidates for the GPU, then model vs measurement.

Two steps, the GPU run in between (``bench/gpu.py``):

    # here (no GPU): search every kernel with the cost model at its EXTRALARGE sizes; write the default
    # schedule as K.cu and the other verified candidates as K.cand-LABEL.cu, plus evolve.json
    python bench/evolve.py --generate bench/cu-evolve [--kernels gemm,atax] [--rounds 3] [--max 7]
    # on the H200: time every build
    python3 bench/gpu.py --cu-dir bench/cu-evolve --quick --skip-naive --out $OUT --name evolve
    # here: join the timings with the model's estimates
    python bench/evolve.py --report bench/cu-evolve/evolve.json --timings evolve.jsonl [--fit] [--out F.md]

The report gives, per kernel: each candidate's estimate and measured time, the
Spearman correlation between them (per kernel, then averaged per family, and
pooled per family over the candidates' times relative to the kernel's default),
the speedup over the default of the candidate the model picks (what
``--evolve`` without a GPU writes) and of the fastest measured one (what a
GPU search picks).  A candidate's time is taken relative to the default's
library timed again in the candidates' own GPU child (``default-again``,
bench/gpu.py), where the timings have it: two children time one build
differently, so opt's time from its own child would bias every speedup.  ``--fit`` also refits the model's fitted constants
(:class:`transpile.search.costmodel.Device`) on half the kernels and reports both halves.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import roofline as R  # noqa: E402

KERNELS = ROOT / "tests" / "kernels"
FAMILIES = {
    "matmul-like": ("gemm", "2mm", "3mm", "syrk", "syr2k", "symm", "trmm", "doitgen", "correlation", "covariance"),
    "blas2": ("atax", "bicg", "mvt", "gesummv", "gemver"),
    "stencil": ("jacobi-1d", "jacobi-2d", "heat-3d", "fdtd-2d", "seidel-2d", "adi"),
    "solver": ("cholesky", "lu", "ludcmp", "durbin", "trisolv", "gramschmidt", "floyd-warshall", "nussinov",
               "deriche"),
}
FITTED = ("launch_s", "iter_s", "access_s", "step_s", "mma_eff", "l2_bw", "sm_share", "contention_warps")


def stem(kernel: str) -> str:
    return kernel.replace("-", "_")


def label_of(name: str) -> str:
    """A schedule name as a file label (bench/gpu.py: [A-Za-z0-9_.=x-]+)."""
    return name.replace(" ", "_")


def family_of(kernel: str) -> str:
    return next((f for f, ks in FAMILIES.items() if kernel in ks), "other")


# ---------------------------------------------------------------------------
# Generation


def search_one(kernel: str, rounds: int, seed: int, include: Sequence[str] = ()) -> dict[str, Any]:
    """The model-ranked search of one kernel at its EX sizes (run in a worker process), plus the
    ``include`` schedules (verified and recorded like the others: what a GPU run should time even
    if the model does not rank it)."""
    from transpile import frontend
    from transpile.search import evolve

    src = KERNELS / f"{stem(kernel)}.c"
    module = frontend.load(src)
    sizes = dict(R.plan_sizes(kernel)["EX"])
    check = evolve.verify_candidate(src, gpu=False, sizes=sizes, seed=seed)
    search = evolve.Search(module, src.name, check, evolve.Settings(rounds=rounds, sizes=sizes, seed=seed))
    t0 = time.monotonic()
    search.run()
    for text in include:
        search.include(evolve.Schedule.parse(text))
    best = search.best()
    return {"kernel": kernel, "sizes": sizes, "seconds": time.monotonic() - t0, "stopped": search.stopped,
            "relevant": sorted(search.relevant), "best": best.name if best else None,
            "trials": [t.row() for t in search.trials],
            "texts": {t.name: t.text for t in search.trials if t.status == "pass" and t.text is not None}}


def generate(kernels: Sequence[str], out: Path, *, rounds: int, seed: int, cap: int, jobs: int,
             include: Sequence[str] = ()) -> None:
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = {"kernels": {}, "rounds": rounds, "seed": seed, "cap": cap, "include": list(include)}
    with ProcessPoolExecutor(jobs) as ex:
        futs = {k: ex.submit(search_one, k, rounds, seed, include) for k in kernels}
        for k, f in futs.items():
            try:
                r = f.result()
            except Exception as e:  # noqa: BLE001 - one kernel's failure is a manifest entry
                manifest["kernels"][k] = {"error": f"{type(e).__name__}: {e}"}
                print(f"{k:15} ERROR {e}", file=sys.stderr)
                continue
            texts = r.pop("texts")
            passing = sorted((t for t in r["trials"] if t["status"] == "pass"),
                             key=lambda t: (t["schedule"] != "default", t["rank"] or 0))
            chosen = [t for t in passing if t["origin"] != "include"][: cap + 1]
            chosen += [t for t in passing if t["origin"] == "include"]
            if r["best"] and r["best"] not in [t["schedule"] for t in chosen]:
                chosen.append(next(t for t in passing if t["schedule"] == r["best"]))
            files = {}
            for t in chosen:
                name = t["schedule"]
                fname = f"{stem(k)}.cu" if name == "default" else f"{stem(k)}.cand-{label_of(name)}.cu"
                (out / fname).write_text(texts[name])
                files[name] = "default" if name == "default" else f"cand-{label_of(name)}"
            r["variants"] = files
            manifest["kernels"][k] = r
            print(f"{k:15} {r['seconds']:5.0f} s  {len(passing)} passing, {len(files)} written; model best "
                  f"{r['best']}; {r['stopped']}", file=sys.stderr)
    (out / "evolve.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))


# ---------------------------------------------------------------------------
# Report


def measured(timings: Path) -> dict[tuple[str, str], float]:
    """(kernel, variant) -> median ms at EX, for builds whose every check passed; with
    ``(kernel, R.BASELINE)``, opt's library timed again in the candidates' child, where bench/gpu.py
    timed it (it passes or fails with opt: the same library)."""
    recs = [json.loads(ln) for ln in timings.read_text().splitlines() if ln.strip()]
    bad = {(r["kernel"], r["variant"]) for r in recs if r.get("type") == "check" and r.get("verdict") != "pass"}
    bad |= {(k, R.BASELINE) for k, v in bad if v == "default"}
    out = {}
    for r in recs:
        if r.get("type") == "time" and r.get("label") == "EX" and r.get("ms") and (r["kernel"], r["variant"]) not in bad:
            out[(r["kernel"], r["variant"])] = float(r["ms"])
    return out


def relative(times: Mapping[tuple[str, str], float], k: str, v: str) -> float | None:
    """``v``'s time over the default's, both from one GPU child where they can be: a candidate over
    ``R.BASELINE`` (the default's library timed round-robin with the candidates) when that was timed,
    else over the default's own time from the first child (biased: an H200 run measured every
    candidate of durbin and jacobi-1d, whose block shape cannot matter, 8-12% faster).  1 for the
    default; None when a time is missing."""
    if v == "default":
        return 1.0 if (k, v) in times else None
    base = times.get((k, R.BASELINE)) or times.get((k, "default"))
    t = times.get((k, v))
    return t / base if t and base else None


def prepare(manifest: Mapping[str, Any]) -> list[tuple[str, str, Any, list[Any], dict[str, int], Any]]:
    """Every timed candidate lowered once: (kernel, variant, IR kernel, launches, sizes, tile options)."""
    from transpile import cuda, frontend
    from transpile.search import evolve

    out = []
    for k, entry in manifest["kernels"].items():
        if "variants" not in entry:
            continue
        module = frontend.load(KERNELS / f"{stem(k)}.c")
        for name, variant in entry["variants"].items():
            sched = evolve.Schedule.parse(name)
            lowered = sched.lower(module)
            infos = cuda.launches_by_kernel(lowered, tiling=sched.options())
            for kern in lowered.kernels:
                out.append((k, variant, kern, infos[kern.name], entry["sizes"], sched.options()))
    return out


_PREPARED: dict[int, list[Any]] = {}


def ptxas_resources(manifest: Mapping[str, Any], cu_dir: Path, jobs: int = 2) -> dict[tuple[str, str], Any]:
    """ptxas's figures for every timed candidate's build in ``cu_dir`` (``nvcc -arch=sm_90 -cubin
    -Xptxas -v``, as the search's stage (b)), per (kernel, variant): ``{kernel name: Resources}``.
    Cached in ``cu_dir/ptxas.json`` by file name and size."""
    import subprocess
    import tempfile

    from transpile.search import costmodel
    from transpile.toolchain import parse_ptxas

    cache_path = cu_dir / "ptxas.json"
    cache: dict[str, Any] = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    wanted: dict[tuple[str, str], Path] = {}
    for k, entry in manifest["kernels"].items():
        for variant in entry.get("variants", {}).values():
            f = cu_dir / (f"{stem(k)}.cu" if variant == "default" else f"{stem(k)}.{variant}.cu")
            if f.exists():
                wanted[(k, variant)] = f

    def compile_one(f: Path) -> tuple[str, list[dict[str, Any]]]:
        with tempfile.TemporaryDirectory() as d:
            proc = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o", f"{d}/k.cubin", str(f)],
                                  capture_output=True, text=True, check=False)
        return f"{f.name}:{f.stat().st_size}", parse_ptxas(proc.stdout + proc.stderr)

    todo = [f for f in wanted.values() if f"{f.name}:{f.stat().st_size}" not in cache]
    if todo:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(jobs) as ex:
            for key, recs in ex.map(compile_one, todo):
                cache[key] = recs
        cache_path.write_text(json.dumps(cache, indent=1, sort_keys=True))
    out: dict[tuple[str, str], Any] = {}
    for kv, f in wanted.items():
        recs = cache[f"{f.name}:{f.stat().st_size}"]
        out[kv] = {r.get("kernel", ""): costmodel.Resources(r.get("registers", 32), r.get("smem", 0),
                                                            r.get("spill_stores", 0) + r.get("spill_loads", 0))
                   for r in recs}
    return out


def remodel(manifest: Mapping[str, Any], device: Any,
            resources: Mapping[tuple[str, str], Any] | None = None) -> dict[tuple[str, str], float]:
    """Every candidate's estimate again with ``device``'s constants (with ptxas's ``resources`` per
    (kernel, variant) where given, as the search has them; else without)."""
    from transpile.search import costmodel

    if id(manifest) not in _PREPARED:
        _PREPARED[id(manifest)] = prepare(manifest)
    prepared = _PREPARED[id(manifest)]
    out: dict[tuple[str, str], float] = {}
    for k, variant, kern, infos, sizes, opts in prepared:
        res = (resources or {}).get((k, variant))
        est = costmodel.estimate(kern, infos, sizes, tiling=opts, resources=res, device=device)
        out[(k, variant)] = out.get((k, variant), 0.0) + est.seconds * 1e3
    return out


def correlations(manifest: Mapping[str, Any], model: Mapping[tuple[str, str], float],
                 times: Mapping[tuple[str, str], float], kernels: Sequence[str]) -> dict[str, Any]:
    from transpile.search.costmodel import spearman

    per_kernel: dict[str, float | None] = {}
    pooled: dict[str, tuple[list[float], list[float]]] = {}
    for k in kernels:
        entry = manifest["kernels"].get(k, {})
        vs = [v for v in entry.get("variants", {}).values()
              if relative(times, k, v) is not None and (k, v) in model]
        # ranked by time relative to the default in the same child: candidates against the baseline
        per_kernel[k] = spearman([model[(k, v)] for v in vs], [relative(times, k, v) or 0.0 for v in vs])
        base_m = model.get((k, "default"))
        if base_m and (k, "default") in times:
            xs, ys = pooled.setdefault(family_of(k), ([], []))
            for v in vs:
                xs.append(math.log(model[(k, v)] / base_m))
                ys.append(math.log(relative(times, k, v) or 1.0))
    fam: dict[str, dict[str, Any]] = {}
    for f in FAMILIES:
        rs = [r for k in kernels if family_of(k) == f and (r := per_kernel.get(k)) is not None]
        xs, ys = pooled.get(f, ([], []))
        fam[f] = {"kernels": len(rs), "mean": statistics.mean(rs) if rs else None,
                  "pooled": spearman(xs, ys), "pairs": len(xs)}
    return {"per_kernel": per_kernel, "family": fam}


def picks(manifest: Mapping[str, Any], model: Mapping[tuple[str, str], float],
          times: Mapping[tuple[str, str], float]) -> list[dict[str, Any]]:
    """Per kernel with a timed default: the model's pick and the fastest measured build, each with its
    speedup over the default (``1 / relative``: a candidate's is the same-child baseline's time over
    its own when bench/gpu.py timed the baseline; ``baseline`` says which was used)."""
    from transpile.search.evolve import clearly_faster

    rows = []
    for k, entry in manifest["kernels"].items():
        if (k, "default") not in times:
            continue
        rel = {v: r for v in entry.get("variants", {}).values() if (r := relative(times, k, v)) is not None}
        vs = sorted(rel, key=lambda v: v != "default")
        modelled = [v for v in vs if (k, v) in model]
        low = min((model[(k, v)] for v in modelled), default=None)
        # the search's rule: the default unless the best estimate is clearly faster (evolve.clearly_faster);
        # else the first within the tournament's 3% of the best
        by_model = next((v for v in modelled if low is not None and model[(k, v)] <= low * 1.03), "default")
        if ("default" in modelled and low is not None and by_model != "default"
                and not clearly_faster(low, model[(k, "default")])):
            by_model = "default"
        fastest = min(vs, key=lambda v: rel[v])  # default first: an exact tie stays with it
        searched = entry.get("variants", {}).get(entry.get("best") or "default")  # what --evolve wrote
        rows.append({"kernel": k, "candidates": len(vs), "default_ms": times[(k, "default")],
                     "search_pick": searched if searched in rel else None,
                     "search_pick_speedup": 1 / rel[searched] if searched in rel else None,
                     "baseline": "same child" if (k, R.BASELINE) in times else "other child",
                     "model_pick": by_model, "model_pick_speedup": 1 / rel[by_model],
                     "fastest": fastest, "fastest_speedup": 1 / rel[fastest]})
    return rows


def geomean(xs: Sequence[float]) -> float | None:
    return math.exp(statistics.mean(math.log(x) for x in xs)) if xs else None


def fit(manifest: Mapping[str, Any], times: Mapping[tuple[str, str], float], train: Sequence[str],
        resources: Mapping[tuple[str, str], Any] | None = None) -> Any:
    """Coordinate search over the fitted constants (factors of 1/4..4) maximising the mean
    per-kernel Spearman on the ``train`` kernels."""
    from transpile.search import costmodel

    dev = costmodel.H200

    def score(d: Any) -> float:
        c = correlations(manifest, remodel(manifest, d, resources), times, train)
        rs = [r for r in c["per_kernel"].values() if r is not None]
        return statistics.mean(rs) if rs else -1.0

    best = score(dev)
    for _round, name in itertools.product(range(2), FITTED):
        for factor in (0.25, 0.5, 2.0, 4.0):
            cand = replace(dev, **{name: getattr(dev, name) * factor})
            s = score(cand)
            if s > best + 1e-9:
                best, dev = s, cand
    return dev


def report(manifest_path: Path, timings: Path, *, do_fit: bool, ptxas: Path | None = None) -> str:
    manifest = json.loads(manifest_path.read_text())
    times = measured(timings)
    kernels = [k for k in manifest["kernels"] if any(kv[0] == k for kv in times)]
    from transpile.search import costmodel

    recorded = {(k, v): t["model_ms"] for k, e in manifest["kernels"].items() for t in e.get("trials", [])
                for name, v in e.get("variants", {}).items() if t["schedule"] == name and t.get("model_ms")}
    resources = ptxas_resources(manifest, ptxas) if ptxas is not None else None
    model = remodel(manifest, costmodel.H200, resources)
    lines = [f"# Schedule search: cost model vs H200 ({time.strftime('%Y-%m-%d')})", "",
             f"Manifest `{manifest_path}` (rounds {manifest['rounds']}, seed {manifest['seed']}); timings "
             f"`{timings}` (median CUDA-event time at EXTRALARGE of builds that passed every GPU check).", ""]

    def section(title: str, model: Mapping[tuple[str, str], float], ks: Sequence[str]) -> None:
        c = correlations(manifest, model, times, ks)
        lines.extend([f"## {title}", "", "| family | kernels ranked (>= 3 timed candidates, estimates not all equal) | mean per-kernel Spearman | "
                      "pooled Spearman (log time / default) | pairs |", "|---|---|---|---|---|"])
        for f, v in c["family"].items():
            mean = f"{v['mean']:.2f}" if v["mean"] is not None else "-"
            pooled = f"{v['pooled']:.2f}" if v["pooled"] is not None else "-"
            lines.append(f"| {f} | {v['kernels']} | {mean} | {pooled} | {v['pairs']} |")
        lines.append("")
        lines.append("Per kernel: " + ", ".join(f"{k} {r:.2f}" if r is not None else f"{k} -"
                                                for k, r in c["per_kernel"].items()))
        lines.append("")

    section("Spearman, the estimates recorded by the search (with ptxas resources)", recorded, kernels)
    section("Spearman, the model as shipped now (" + ("with ptxas resources of the builds in "
            f"`{ptxas}`" if ptxas is not None else "no ptxas resources") + ")", model, kernels)
    rows = picks(manifest, model, times)
    lines.extend(["## Picks", "", "Speedups of candidates are over the default's library timed again in the "
                  "candidates' own GPU child, round-robin with them ('same child'), or, in timings without it, "
                  "over the default's time from its own child ('other child': biased by the drift between "
                  "children, 8-12% in one H200 run).", "",
                  "'search's pick': what the search recorded in the manifest chose (`transpile --evolve` without a "
                  "GPU, the model of the day it ran); 'model's pick': the model of this report over the timed "
                  "candidates, by the search's rule (the default unless a candidate is estimated faster by more "
                  "than the model's margin); 'fastest': the GPU-measured search's choice among them.", "",
                  "| kernel | timed candidates | default ms | baseline | search's pick | speedup | model's pick | "
                  "speedup | fastest | speedup |", "|---|---|---|---|---|---|---|---|---|---|"])
    for r in rows:
        sp = (f"{r['search_pick']} | {r['search_pick_speedup']:.3f}x" if r["search_pick"] is not None
              else "(not timed) | -")
        lines.append(f"| {r['kernel']} | {r['candidates']} | {r['default_ms']:.4g} | {r['baseline']} | {sp} | "
                     f"{r['model_pick']} | {r['model_pick_speedup']:.3f}x | {r['fastest']} | "
                     f"{r['fastest_speedup']:.3f}x |")
    gm, gf = geomean([r["model_pick_speedup"] for r in rows]), geomean([r["fastest_speedup"] for r in rows])
    gs = geomean([r["search_pick_speedup"] for r in rows if r["search_pick_speedup"] is not None])
    slower = [r["kernel"] for r in rows if r["model_pick_speedup"] < 0.97]
    slower_s = [r["kernel"] for r in rows if r["search_pick_speedup"] is not None and r["search_pick_speedup"] < 0.97]
    lines.extend(["", f"- Geomean speedup over the default schedule: search's pick {gs:.3f}x, model's pick {gm:.3f}x, "
                      f"fastest measured {gf:.3f}x, over {len(rows)} kernels." if gm and gf and gs
                  else "- No kernel timed.",
                  f"- Search's picks slower than the default by more than 3%: {', '.join(slower_s) or 'none'}.",
                  f"- Model's picks slower than the default by more than 3%: {', '.join(slower) or 'none'}.", ""])
    if do_fit:
        train = kernels[::2]
        test = kernels[1::2]
        dev = fit(manifest, times, train, resources)
        refit = remodel(manifest, dev, resources)
        lines.append("Refitted constants (on every other kernel): " + ", ".join(
            f"{n}={getattr(dev, n):.3g}" for n in FITTED))
        lines.append("")
        section("Spearman after the fit, training kernels", refit, train)
        section("Spearman after the fit, held-out kernels", refit, test)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generate", type=Path, metavar="DIR")
    ap.add_argument("--kernels", help="comma-separated names; default: all 30")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max", type=int, default=7, help="candidates per kernel besides the default")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--include", default="", metavar="S;S",
                    help="schedules to verify and write for every kernel besides the search's, ';'-separated "
                         "(e.g. 'rows=4;block2=32x4x1 rows=4'); duplicates of another candidate's CUDA are dropped")
    ap.add_argument("--report", type=Path, metavar="MANIFEST")
    ap.add_argument("--timings", type=Path, metavar="JSONL")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--ptxas", type=Path, metavar="CU_DIR",
                    help="remodel with ptxas's resources of the builds in CU_DIR (nvcc -Xptxas -v, cached there)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.generate:
        generate(R.parse_kernels(args.kernels), args.generate, rounds=args.rounds, seed=args.seed, cap=args.max,
                 jobs=args.jobs, include=[s for s in args.include.split(";") if s.strip()])
        return 0
    if args.report and args.timings:
        text = report(args.report, args.timings, do_fit=args.fit, ptxas=args.ptxas)
        if args.out:
            args.out.write_text(text + "\n")
        print(text)
        return 0
    ap.error("give --generate DIR, or --report MANIFEST --timings JSONL")
    return 2


if __name__ == "__main__":
    sys.exit(main())

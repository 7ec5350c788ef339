"""Run the verifier's GPU stages over the 30 PolyBench kernels and the cheats; print a table.

    python bench/verify_gpu.py [--out DIR] [-j N] [--timeout S] [--only NAME ...]

For each ``tests/kernels/K.c``: ``transpile K.c -o K.cu --no-verify``, then
``transpile verify K.cu --against K.c --stages abcdef --json``.  For each cheat
``tests/cheats/X.cu`` (and the honest controls ``ok_*.cu``): ``transpile verify
X.cu --against REF --stages abdef --json``, stage (c) skipped so that the GPU
stages alone must reject it.  The references are those of tests/test_verify.py's
cheat table.  Writes ``DIR/records.jsonl`` (one verifier record a run, as it
comes) and ``DIR/verify_gpu.md`` (the table), and prints the table.

Kernels run ``-j`` at a time (default 2): each verifier run has its own GPU
worker process and CUDA context, so concurrent runs cannot see each other's
work; stage (f) timings are then taken on a shared GPU and are indicative only.
Exit status: 0 when every kernel passed and every cheat was rejected, else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "tests" / "kernels"
CHEATS = ROOT / "tests" / "cheats"


def cheat_reference(name: str) -> Path:
    """The reference C file of a cheat: by its name's prefix, as in tests/test_verify.py."""
    prefix = name.removeprefix("ok_").split("_")[0]
    table = {"gemm": KERNELS / "gemm.c", "atax": KERNELS / "atax.c", "jacobi": KERNELS / "jacobi_2d.c",
             "dot": CHEATS / "dot.c"}
    return table[prefix]


def transpile(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "transpile.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def run_one(kind: str, name: str, cu: Path, ref: Path, stages: str, timeout: float, work: Path) -> dict:
    start = time.time()
    row: dict = {"kind": kind, "name": name}
    try:
        if kind == "kernel" and not cu.exists():
            gen = transpile(str(ref), "-o", str(cu), "--no-verify", timeout=timeout)
            if gen.returncode != 0:
                return {**row, "verdict": "compile-error", "reason": (gen.stderr or gen.stdout).strip()[-300:],
                        "seconds": time.time() - start}
        proc = transpile("verify", str(cu), "--against", str(ref), "--stages", stages, "--json", "-q",
                         timeout=timeout)
        record = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
        if not record:
            return {**row, "verdict": "no-record", "reason": proc.stderr.strip()[-300:], "seconds": time.time() - start}
        return {**row, "record": record, "verdict": record.get("verdict"), "reason": record.get("reason", ""),
                "seconds": time.time() - start}
    except subprocess.TimeoutExpired:
        return {**row, "verdict": "timeout", "reason": f"no answer in {timeout:.0f} s", "seconds": time.time() - start}


def stage_cell(record: dict, key: str) -> str:
    st = record.get("stages", {}).get(key, {})
    status = st.get("status", "?")
    short = {"pass": "pass", "fail": "FAIL", "skipped": "skip", "not run": "-", "not applicable": "n/a"}.get(status,
                                                                                                         status)
    if status == "fail" and st.get("check"):
        short += f" `{st['check']}`"
    return short


def resources(record: dict) -> str:
    return resource_summary(record.get("resources") or [])


def resource_summary(res: list[dict]) -> str:
    """``3k 40r 0B`` from parsed ptxas records (``stages.parse_ptxas``): kernels, max registers,
    max shared bytes, and SPILL if any kernel spills; empty without records."""
    if not res:
        return ""
    regs = max(int(r.get("registers", 0)) for r in res)
    spills = sum(int(r.get("spill_stores", 0)) + int(r.get("spill_loads", 0)) for r in res)
    smem = max(int(r.get("smem", 0)) for r in res)
    return f"{len(res)}k {regs}r {smem}B{' SPILL' if spills else ''}"


def timing(record: dict) -> tuple[str, str, str]:
    t = record.get("timing") or {}
    ms = t.get("median_ms")
    sizes = next((s.get("sizes") or {} for s in record.get("shapes", []) if s.get("stage") == "e"), {})
    sp = t.get("speedup")
    return (f"{ms:.4g}" if isinstance(ms, (int, float)) else "",
            f"{sp:.3g}x" if isinstance(sp, (int, float)) else "",
            " ".join(f"{k}={v}" for k, v in sizes.items()))


def table(rows: list[dict]) -> str:
    lines = ["| kind | name | verdict | (a) | (b) | (c) | (d) | (e) | (f) | kernels/regs/smem | median ms | "
             "vs gcc -O2 | sizes | run s | reason |",
             "|" + "---|" * 15]
    for r in rows:
        rec = r.get("record", {})
        ms, sp, sizes = timing(rec)
        reason = (r.get("reason") or "").replace("|", "\\|").replace("\n", " ")[:160]
        lines.append(f"| {r['kind']} | {r['name']} | {r['verdict']} | "
                     + " | ".join(stage_cell(rec, k) for k in "abcdef")
                     + f" | {resources(rec)} | {ms} | {sp} | {sizes} | {r['seconds']:.0f} | {reason} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench/results")))
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=240.0)
    ap.add_argument("--only", nargs="*", default=None, help="kernel or cheat names")
    ap.add_argument("--no-cheats", action="store_true")
    ap.add_argument("--no-kernels", action="store_true")
    ap.add_argument("--kernel-stages", default="abcdef", help="stages for the pipeline's kernels")
    ap.add_argument("--cu-dir", type=Path, default=None,
                    help="take K.cu from here when present instead of transpiling K.c (e.g. built from a clean "
                         "checkout)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(os.environ.get("TMPDIR", "/tmp")) / f"verify-gpu-cu-{os.getpid()}"  # not under --out: 8 files max
    work.mkdir(parents=True, exist_ok=True)
    jobs = []
    if not args.no_kernels:
        for c in sorted(KERNELS.glob("*.c")):
            pre = args.cu_dir / f"{c.stem}.cu" if args.cu_dir else None
            jobs.append(("kernel", c.stem, pre if pre and pre.exists() else work / f"{c.stem}.cu", c,
                         args.kernel_stages))
    if not args.no_cheats:
        for cu in sorted(CHEATS.glob("*.cu")):
            kind = "control" if cu.stem.startswith("ok_") else "cheat"
            jobs.append((kind, cu.stem, cu, cheat_reference(cu.stem), "abdef"))
    if args.only:
        jobs = [j for j in jobs if j[1] in args.only]
    rows: list[dict] = []
    with open(args.out / "records.jsonl", "w") as log, ThreadPoolExecutor(max(1, args.j)) as pool:
        futures = [pool.submit(run_one, *j, args.timeout, work) for j in jobs]
        for f in futures:
            r = f.result()
            rows.append(r)
            log.write(json.dumps(r, default=str) + "\n")
            log.flush()
            print(f"{r['kind']:8} {r['name']:24} {r['verdict']:14} {r['seconds']:6.1f} s  {r.get('reason', '')[:120]}",
                  flush=True)
    text = table(rows)
    (args.out / "verify_gpu.md").write_text(text + "\n")
    print(text)
    # A kernel or control must pass; a cheat must fail (inconclusive or unverified is not a rejection).
    bad = [r["name"] for r in rows if r["verdict"] != ("fail" if r["kind"] == "cheat" else "pass")]
    print(f"\n{len(rows)} runs; kernels/controls passed and cheats rejected: {len(rows) - len(bad)}/{len(rows)}"
          + (f"; wrong: {' '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

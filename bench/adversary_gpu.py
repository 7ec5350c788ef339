"""Run every adversary in tests/adversary/**/*.cu through the whole verifier, GPU stages included; print a table.

    python bench/adversary_gpu.py [-j N] [--stages abcdef] [--mode full|quick] [--sanitizer]
                                  [--timeout S] [--only SUBSTRING ...] [--out DIR]

Each file's header says what it is (docs/verify.md, "The adversaries"):

    // class: N (<name>)        the threat class of issue 38
    // wrong for: ...           the legitimate input or call sequence it gets wrong ("nothing" for a control)
    // against: ref.c           the reference (beside the file, else tests/kernels/ or tests/cheats/)
    // expect: reject|accept    a cheat must be rejected, a control accepted
    // gpu-only: <why>          optional: only a GPU can expose it (the CPU tests leave it out)
    // function: NAME           optional: the reference function, when the file has several
    // mode: full|quick ...     optional: the verifier mode this file needs (over --mode)

Each file is verified in its own process (``verify_file`` with one full-size seed; compute-sanitizer
only with ``--sanitizer``, it is slow), ``-j`` at a time.  The children get ``TRANSPILE_VERIFY_BENCH=1``
in their environment, as a harness's switch would be: the verifier must not pass it on to the
candidate.  Prints one line per file as it finishes, then the table (file, class, expected,
verdict, the failing stage and check, seconds) and writes it with the records to ``--out``.
Exit status 1 when a cheat was not rejected (passed, or inconclusive) or a control was not
accepted, 2 when the GPU stages were asked for and no GPU answers, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADVERSARY = ROOT / "tests" / "adversary"
FIELDS = ("class", "wrong for", "against", "expect", "gpu-only", "function", "mode")


def header(path: Path) -> dict[str, str]:
    """The ``// key: value`` lines at the top of ``path`` (continuation lines ``//   ...`` appended)."""
    out: dict[str, str] = {}
    last = None
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith("//"):
            break
        m = re.match(r"//\s*([a-z-]+(?: [a-z]+)?):\s*(.*)$", line)
        if m and m.group(1) in FIELDS:
            last = m.group(1)
            out[last] = m.group(2).strip()
        elif last and line.startswith("//  "):
            out[last] += " " + line[2:].strip()
    return out


def _mode(asked: str, default: str) -> str:
    """A file's own ``mode:`` (its first word: a cheat only full mode can catch says so) over ``--mode``."""
    word = asked.split()[0] if asked.split() else ""
    return word if word in ("full", "quick") else default


def reference(cu: Path, name: str) -> Path | None:
    for d in (cu.parent, ROOT / "tests" / "kernels", ROOT / "tests" / "cheats"):
        if (d / name).is_file():
            return d / name
    return None


def verify_one(cu: Path, ref: Path, function: str | None, stages: str, mode: str, sanitizer: bool) -> dict:
    """The verifier's record for one file (run in this process: the child side of :func:`run`)."""
    from transpile.verify.stages import Options, verify_file

    opts = Options(mode=mode, stages="a" + stages.replace("a", ""), full_seeds=1, sanitizer=sanitizer)
    return verify_file(cu, ref, function=function, options=opts).to_json()


def run(cu: Path, args: argparse.Namespace) -> dict:
    info = header(cu)
    row = {"file": str(cu.relative_to(ROOT)), "class": info.get("class", "?").split(" ")[0],
           "expect": info.get("expect", "?"), "gpu_only": "gpu-only" in info}
    ref = reference(cu, info.get("against", ""))
    start = time.time()
    if ref is None or row["expect"] not in ("reject", "accept"):
        return {**row, "verdict": "bad-header", "where": "", "seconds": 0.0,
                "reason": f"no reference '{info.get('against')}'" if ref is None else "expect: reject|accept"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(cu), str(ref), info.get("function", ""),
           args.stages, _mode(info.get("mode", ""), args.mode), "1" if args.sanitizer else "0"]
    env = {**os.environ, "TRANSPILE_VERIFY_BENCH": "1"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return {**row, "verdict": "timeout", "where": "", "seconds": time.time() - start,
                "reason": f"no answer in {args.timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {**row, "verdict": "no-record", "where": "", "seconds": time.time() - start,
                "reason": (proc.stderr.strip().splitlines() or ["?"])[-1][:200]}
    record = json.loads(lines[-1])
    failed = next(((k, s) for k, s in record.get("stages", {}).items() if s.get("status") in ("fail", "inconclusive")),
                  None)
    where = f"({failed[0]}) {failed[1].get('check') or failed[1].get('status')}" if failed else ""
    return {**row, "verdict": record.get("verdict", "?"), "where": where, "seconds": time.time() - start,
            "reason": record.get("reason", ""), "record": record}


def good(row: dict) -> bool:
    return row["verdict"] == ("fail" if row["expect"] == "reject" else "pass")


def table(rows: list[dict]) -> str:
    lines = ["| file | class | expected | verdict | check | s | ok |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        gpu_only = " (gpu-only)" if r["gpu_only"] else ""
        lines.append(f"| {r['file']}{gpu_only} | {r['class']} | {r['expect']} | {r['verdict']} | {r['where']} | "
                     f"{r['seconds']:.0f} | {'yes' if good(r) else 'NO'} |")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        cu, ref, function, stages, mode, sanitizer = sys.argv[2:8]
        print(json.dumps(verify_one(Path(cu), Path(ref), function or None, stages, mode, sanitizer == "1"),
                         default=str))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-j", type=int, default=4)
    ap.add_argument("--stages", default="abcdef")
    ap.add_argument("--mode", default="full", choices=("full", "quick"))
    ap.add_argument("--sanitizer", action="store_true")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--only", nargs="*", default=None, help="substrings of the files' paths")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "bench/results")))
    args = ap.parse_args()
    if any(k in args.stages for k in "def"):
        from transpile.verify import gpu

        info = gpu.detect()
        print(f"GPU: {info.name or info.reason} ({info.backend or 'no runtime'})", flush=True)
        if not info.available:
            print("no GPU here: the GPU stages would be skipped and every file left unverified")
            return 2
    files = sorted(ADVERSARY.glob("**/*.cu"))
    if args.only:
        files = [f for f in files if any(s in str(f) for s in args.only)]
    if not files:
        print(f"no adversaries under {ADVERSARY}")
        return 1
    rows = []
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "adversary_gpu.jsonl", "w") as log, ThreadPoolExecutor(max(1, args.j)) as pool:
        for fut in as_completed([pool.submit(run, f, args) for f in files]):
            r = fut.result()
            rows.append(r)
            log.write(json.dumps(r, default=str) + "\n")
            log.flush()
            print(f"{r['file']:56} {r['expect']:6} {r['verdict']:12} {r['where']:28} {r['seconds']:6.1f} s  "
                  f"{(r.get('reason') or '')[:100]}", flush=True)
    rows.sort(key=lambda r: r["file"])
    text = table(rows)
    print(text)
    (args.out / "adversary_gpu.md").write_text(text + "\n")
    bad = [r["file"] for r in rows if not good(r)]
    print(f"\n{len(rows)} files; as expected: {len(rows) - len(bad)}/{len(rows)}" + (f"; not: {' '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

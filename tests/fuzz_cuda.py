"""Fuzz the whole compiler: random PolyBench-shaped C kernels, compiled and verified.

    python tests/fuzz_cuda.py [N] [-j JOBS] [--seed S] [--out DIR] [--no-options] [--ordinary] [-- EXTRA TRANSPILE ARGS]

Draws N programs with :func:`tests.cgen.program` (seeds S .. S+N-1; with
``--ir``, N random affine nests of tests/affine_nests.py drawn with Hypothesis
seed S, as ``.ir`` files verified against the IR interpreter; with
``--mutate``, N mutants of the 30 PolyBench kernels and of generated programs,
:func:`mutant`: another hand's code, made wrong or different a few tokens at a
time), runs
``transpile CASE.c -o CASE.cu OPTIONS`` on each, OPTIONS drawn by
:func:`tests.cgen.options` (tiles, micro-tiles, block shapes, ``--naive``,
``--no-mma`` and the like; none with ``--no-options``).  That is the front end,
the passes, the CUDA emitter and the verifier's stages a-c (the emitted CUDA
compiled by nvcc, then run on the CPU simulator against gcc's build of the same
C at several sizes), JOBS cases at a time.  The outcomes:

* ``ok``: verified and written;
* ``unverified``: written, with a "not fully verified" warning;
* ``rejected``: a located ``file:line:col: error:`` (an unsupported construct);
* ``miscompile``: the verifier refused the generated CUDA;
* ``undefined``: the verifier refused it, but the compiler had warned that the
  C program accesses an array out of bounds or may read a local before assigning
  it (undefined behaviour: mutants);
* ``crash``: an internal compiler error, a traceback, a signal, or a pass's
  output refused by the IR check ("invalid IR", located but our bug), or
  an output file left behind by a failed run;
* ``unlocated``: an error without ``file:line:col`` (every refusal of a
  source construct must say where it is);
* ``timeout``: no answer in ``--timeout`` seconds;
* ``usage``: the CLI refused the options drawn (the fuzzer's fault).

Each case other than ``ok`` is kept in DIR (``case-SEED.c`` and ``.log``); one
JSON line per case goes to DIR/results.jsonl.  The last line is always
``fuzz-cuda: N cases, ... , T s`` and the exit status is 1 when a case was a
miscompile, a crash or a timeout.

Needs gcc and nvcc; not pytest (a single case takes seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import cgen  # noqa: E402

BAD = ("miscompile", "crash", "timeout", "unlocated")
KERNELS = Path(__file__).resolve().parent / "kernels"


def classify(rc: int | None, err: str) -> str:
    if rc is None:
        return "timeout"
    if rc == 0:
        return "unverified" if "not fully verified" in err else "ok"
    if rc == 2 and ("Invalid value" in err or "Usage:" in err):
        return "usage"  # the options drawn do not go together (a fuzzer bug, not the compiler's)
    if "internal compiler error" in err or "Traceback" in err or "invalid IR" in err or rc < 0:
        return "crash"
    if "verification of the generated CUDA" in err:
        # the compiler warned that the C reads or writes out of bounds: no defined result to match
        return "undefined" if "[-Wout-of-bounds]" in err or "[-Wuninitialized]" in err else "miscompile"
    if rc == 1 and re.search(r":\d+:\d+: error: ", err):
        return "rejected"
    if rc == 1 and ": error: " in err:
        return "unlocated"
    return "crash"


_TOKEN = re.compile(r"\s+|/\*.*?\*/|//[^\n]*|#[^\n]*|[A-Za-z_]\w*|\d+\.\d*(?:[eE][-+]?\d+)?|\d+|"
                    r"\+\+|--|&&|\|\||[-+*/<>=!]=|.", re.S)
_KEYWORDS = {"for", "if", "else", "int", "double", "float", "long", "void", "return", "const", "char",
             "unsigned", "sqrt", "exp", "pow", "fabs", "fmax", "fmin", "floor", "ceil"}
_CLASSES = [("+", "-", "*"), ("<", "<=", ">", ">="), ("+=", "-=", "*=", "=")]


def mutant(seed: int) -> tuple[str, str]:
    """(name, text): a PolyBench kernel of tests/kernels, or one time in three a generated program
    (:func:`tests.cgen.program`, named ``fuzz-SEED.c``), with 1-3 tokens of its scop changed, by
    class so that most mutants stay valid C: an identifier for another of the file's (a loop
    variable for another, an array for a scalar), an operator for one of its class, an integer for
    a neighbour or 0, a token deleted or a statement repeated; one time in five, also a
    ``double`` of the file (its signature included) made ``float``.  Deterministic in ``seed``."""
    import random

    rng = random.Random(seed)
    name, text = mutant_base(seed)
    toks = _TOKEN.findall(text)
    start = next(i for i, t in enumerate(toks) if t.startswith("#pragma scop"))
    end = next(i for i, t in enumerate(toks) if t.startswith("#pragma endscop"))
    idents = sorted({t for t in toks[start:end] if re.fullmatch(r"[A-Za-z_]\w*", t) and t not in _KEYWORDS})
    spots = [i for i in range(start + 1, end) if not toks[i].isspace()]
    changed = 0
    if rng.random() < 0.2:  # a precision change: one 'double' of the file (the signature too) made float
        doubles = [i for i, t in enumerate(toks) if t == "double"]
        if doubles:
            toks[rng.choice(doubles)] = "float"
            changed += 1
    while changed < rng.randint(1, 3):
        i = rng.choice(spots)
        t = toks[i]
        cls = next((c for c in _CLASSES if t in c), None)
        roll = rng.random()
        if roll < 0.08:
            new = ""
        elif roll < 0.14 and t == ";":
            j = max(k for k in range(start, i) if toks[k] in (";", "{", "}", ")") or k == start)
            new = t + "".join(toks[j + 1:i + 1])  # the statement again
        elif t in idents:
            new = rng.choice(idents)
        elif cls is not None:
            new = rng.choice(cls)
        elif t.isdigit():
            new = str(rng.choice([0, 1, 2, int(t) + 1, max(0, int(t) - 1)]))
        elif re.fullmatch(r"\d+\.\d*(?:[eE][-+]?\d+)?", t):
            new = rng.choice(["0.0", "1.0", "0.5", "2.0", "-1.0"])
        else:
            continue
        if new != t:
            toks[i] = new
            changed += 1
    return name, "".join(toks)


def mutant_base(seed: int) -> tuple[str, str]:
    """The program :func:`mutant` changes for ``seed``: (name, text)."""
    import random

    rng = random.Random(seed)
    path = rng.choice(sorted(KERNELS.glob("*.c")))
    if rng.random() < 1 / 3:
        return f"fuzz-{seed}.c", cgen.program(seed)
    return path.name, path.read_text()


def ir_programs(n: int, seed: int) -> list[str]:
    """``n`` random affine nests (tests/affine_nests.py) in IR text form, drawn with Hypothesis seed ``seed``
    (fewer where Hypothesis draws a kernel twice)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from tests import affine_nests
    from transpile import ir
    from transpile.ir import text

    out: list[str] = []

    @hseed(seed)
    @settings(max_examples=n, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(affine_nests.kernels())
    def collect(k: ir.Kernel) -> None:
        out.append(text.show(ir.Module((), (k,))))

    collect()
    return list(dict.fromkeys(out))


def run_case(seed: int, out: Path, extra: list[str], timeout: float, no_options: bool = False,
             ir_text: str | None = None, mutate: bool = False, ordinary: bool = False) -> dict[str, object]:
    src = out / f"case-{seed}.{'c' if ir_text is None else 'ir'}"
    kinds = cgen.ORDINARY if ordinary else cgen.PHASES
    src.write_text(mutant(seed)[1] if mutate else cgen.program(seed, kinds) if ir_text is None else ir_text)
    opts = [] if no_options else cgen.options(seed)
    cmd = [shutil.which("transpile") or "transpile", str(src), "-o", str(out / f"case-{seed}.cu"), *opts, *extra]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "TRANSPILE_TRACEBACK": "1"})
        rc, err = p.returncode, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, err = None, (e.stderr.decode() if isinstance(e.stderr, bytes) else e.stderr or "")
    kind = classify(rc, err)
    if rc != 0 and (out / f"case-{seed}.cu").exists():
        kind, err = "crash", err + "\n(fuzz-cuda: a failed run left its output file)"
    (out / f"case-{seed}.cu").unlink(missing_ok=True)
    if kind == "ok":
        src.unlink()
    else:
        (out / f"case-{seed}.log").write_text(" ".join(cmd) + "\n" + err)
    first = next((ln for ln in err.splitlines() if "error" in ln), err.strip().splitlines()[-1] if err.strip() else "")
    return {"seed": seed, "opts": opts, "kind": kind, "rc": rc, "s": round(time.monotonic() - t0, 2), "msg": first[:300]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=100)
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("fuzz-cuda"))
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--ir", action="store_true",
                    help="random affine nests (tests/affine_nests.py) as .ir files instead of C kernels")
    ap.add_argument("--mutate", action="store_true",
                    help="mutants of the 30 PolyBench kernels and of generated ones (mutant())")
    ap.add_argument("--no-options", action="store_true", help="no random back-end options (cgen.options)")
    ap.add_argument("--ordinary", action="store_true",
                    help="programs of the ordinary-C phases only (cgen.ORDINARY: goto, switch, pointers, strides, "
                         "induction variables, if-reductions, breaks)")
    ap.add_argument("extra", nargs="*", help="arguments passed on to transpile (after --)")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    t0 = time.monotonic()
    with open(a.out / "results.jsonl", "a") as log, ThreadPoolExecutor(a.jobs) as pool:
        irs = ir_programs(a.n, a.seed) if a.ir else None
        seeds = range(a.seed, a.seed + (a.n if irs is None else len(irs)))
        for rec in pool.map(lambda s: run_case(s, a.out, a.extra, a.timeout, a.no_options,
                                               None if irs is None else irs[s - a.seed], a.mutate, a.ordinary), seeds):
            counts[str(rec["kind"])] = counts.get(str(rec["kind"]), 0) + 1
            log.write(json.dumps(rec) + "\n")
            log.flush()
            if rec["kind"] not in ("ok",):
                print(f"case {rec['seed']}: {rec['kind']}: {rec['msg']}", flush=True)
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("ok", "unverified", "rejected", "undefined", *BAD, "usage"))
    print(f"fuzz-cuda: {len(seeds)} cases, {summary}, {time.monotonic() - t0:.0f} s")
    return 1 if any(counts.get(k) for k in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())

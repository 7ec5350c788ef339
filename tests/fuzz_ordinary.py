"""Quick differential fuzz of the ordinary-C constructs: front end and passes against gcc, in process.

    python tests/fuzz_ordinary.py [N] [--seed S] [--all-phases]

Draws N programs of :data:`tests.cgen.ORDINARY` phases (goto, switch, pointers, strides, induction
variables, if-reductions, breaks; 1-3 per program; ``--all-phases``: every cgen phase), lowers each
through the front end and the default pipeline, and runs the lowered IR on the interpreter, its
parallel loops shuffled (random order, random association of reductions), against gcc's build of the C
at two small shapes.  No nvcc and no CUDA simulator (``tests/fuzz_cuda.py --ordinary`` covers the
emitted CUDA, at seconds a case): a few cases a second, so many thousands fit in an hour.

Outcomes: ``ok``, ``rejected`` (a located error), ``miscompile`` (an array differs), ``crash`` (an
exception other than a located error).  The last line is ``fuzz-ordinary: N cases, ...``; the exit
status is 1 when a case was a miscompile or a crash.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from tests import cgen  # noqa: E402

SHAPES = ({"ni": 7, "nj": 5, "nk": 9, "tsteps": 2}, {"ni": 3, "nj": 8, "nk": 1, "tsteps": 1})


def run_case(seed: int, kinds: tuple, workdir: Path) -> tuple[str, str]:
    from transpile import pipeline
    from transpile.diagnostics import TranspileError
    from transpile.frontend import c as cfront
    from transpile.ir import interp
    from transpile.verify.reference import GccReference
    from transpile.verify.signature import kernel_sig
    from transpile.verify.synth import Shape, copy_inputs, make_inputs, seed_for

    src = workdir / f"case-{seed}.c"
    src.write_text(cgen.program(seed, kinds))
    try:
        module = cfront.parse_file(str(src))
        lowered = pipeline.lower(module)
    except TranspileError as e:
        return ("crash" if "internal" in str(e) or "invalid IR" in str(e) else "rejected"), str(e).splitlines()[0]
    except Exception:
        return "crash", traceback.format_exc(limit=3)
    kernel = module.kernels[0]
    sig = kernel_sig(kernel)
    ref = GccReference(sig, src, function=kernel.name)
    ints = [a.name for a in sig.args if a.role in ("size", "int")]
    for k, shape in enumerate(SHAPES):
        x = make_inputs(sig, Shape(str(shape), {n: shape.get(n, 2) for n in ints}), seed_for(seed, k), "signed",
                        "random")
        assert x is not None
        want = ref.run(x)
        for shuffle in (None, seed):
            try:
                have = interp.run(lowered, kernel.name, copy_inputs(x), shuffle=shuffle)
            except Exception:
                return "crash", traceback.format_exc(limit=3)
            for a in sig.arrays:
                if not np.allclose(have[a.name], want[a.name], rtol=1e-9 if sig.arrays[0].dtype == np.float64
                                   else 2e-5, atol=1e-9, equal_nan=True):
                    return "miscompile", f"{a.name} at {shape}, shuffle {shuffle}"
    return "ok", ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--all-phases", action="store_true")
    a = ap.parse_args(argv)
    kinds = cgen.PHASES if a.all_phases else cgen.ORDINARY
    counts: dict[str, int] = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(a.seed, a.seed + a.n):
            kind, msg = run_case(seed, kinds, Path(tmp))
            counts[kind] = counts.get(kind, 0) + 1
            if kind != "ok":
                print(f"case {seed}: {kind}: {msg}", flush=True)
            if (seed - a.seed + 1) % 250 == 0:
                print(f"... {seed - a.seed + 1} cases: {counts}, {time.monotonic() - t0:.0f} s", flush=True)
    summary = ", ".join(f"{counts.get(k, 0)} {k}" for k in ("ok", "rejected", "miscompile", "crash"))
    print(f"fuzz-ordinary: {a.n} cases, {summary}, {time.monotonic() - t0:.0f} s")
    return 1 if counts.get("miscompile") or counts.get("crash") else 0


if __name__ == "__main__":
    sys.exit(main())

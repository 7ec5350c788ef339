"""The drop-in host path's choice at the real PolyBench sizes: the model's two estimates per kernel.

For each real PolyBench/C file in ``../shared/side_by_side/polybench`` (or ``--polybench DIR``), at
``--size`` (LARGE by default): transpile's output (``--no-verify``), and from it the host path's
decision function ``NAME_on_host`` with its helpers, compiled alone with g++ (no GPU, no CUDA: the
decision reads the sizes only) and called at the dataset's sizes (each ``int`` parameter ``n`` is
the dataset's macro ``N``).  Prints one row per kernel: the estimated host and GPU seconds (first
call and a later one), the choice, and the constants used (transpile/cuda/dropin.py ``MODEL``).

Calibrate by comparing with the harness's table of the same size (cpu_s against host_s, transpile_s
against gpu_s first) and setting the constants in ``MODEL``; ``-D NAME=VALUE`` here tries a value
without editing (``-D TRANSPILE_HOST_FIRST_CALL_S=2e-3``).

    python bench/host_model.py [--size LARGE] [-k atax,durbin] [-D MACRO=VALUE ...]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _polybench(given: str | None) -> Path:
    for base in ([Path(given)] if given else []) + [ROOT.parent / "shared" / "side_by_side" / "polybench",
                                                    ROOT.parent.parent / "shared" / "side_by_side" / "polybench"]:
        if (base / "utilities" / "benchmark_list").is_file():
            return base
    sys.exit("no PolyBench folder (../shared/side_by_side/polybench); pass --polybench DIR")


def _macros(header: Path, size: str, util: Path) -> dict[str, int]:
    out = subprocess.run(["gcc", "-E", "-dM", f"-D{size}_DATASET", "-I", str(util), "-x", "c", str(header)],
                         capture_output=True, text=True, check=True).stdout
    vals: dict[str, int] = {}
    for m in re.finditer(r"^#define (\w+) (\d+)\s*$", out, re.M):
        vals[m.group(1)] = int(m.group(2))
    return vals


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="LARGE")
    ap.add_argument("--polybench")
    ap.add_argument("-k", "--kernels", default="")
    ap.add_argument("-D", dest="defines", action="append", default=[])
    a = ap.parse_args()
    from transpile import cuda, frontend, pipeline
    from transpile.cuda import dropin as dropin_host

    pb = _polybench(a.polybench)
    util = pb / "utilities"
    rels = [line.strip().removeprefix("./") for line in (util / "benchmark_list").read_text().split() if line.strip()]
    want = set(a.kernels.split(",")) if a.kernels else None
    print(f"# host path model at {a.size}; constants: "
          + ", ".join(f"{n}={v}" for n, v in dropin_host.MODEL.macros()) + (f"; -D {a.defines}" if a.defines else ""))
    print("| kernel | host_s (est) | gpu_s first call (est) | gpu_s later call (est) | first call takes |")
    print("|---|---:|---:|---:|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for rel in rels:
            path = pb / rel
            name = path.stem
            if want and name not in want:
                continue
            func = "kernel_" + name.replace("-", "_")
            module = frontend.load(path, function=func, include_dirs=[str(util), str(path.parent)],
                                   defines=[f"{a.size}_DATASET"])
            cu = cuda.emit(pipeline.lower(module, verify_each=False), source=path.name, host=module)
            if f"{func}_on_host" not in cu:
                print(f"| {name} | - | - | - | GPU (no host path) |")
                continue
            sizes = _macros(path.with_suffix(".h"), a.size, util)
            h, g1, g2, c = dropin_host.estimates(cu, func, {k.lower(): v for k, v in sizes.items()}, a.defines,
                                                 Path(tmp))
            print(f"| {name} | {h:.3g} | {g1:.3g} | {g2:.3g} | {'host' if c else 'GPU'} |", flush=True)


if __name__ == "__main__":
    main()

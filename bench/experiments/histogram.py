"""Time a histogram with atomic bins on a GPU (passes/atomics.py): the transpiled C histogram,
``hist[(data[i] % nbins + nbins) % nbins] += 1`` on the whole grid with ``atomicAdd``, against
``cupy.bincount`` of the same data (checked equal, exactly) and a device-to-device copy of the
data's bytes: as emitted (each block's bins in shared memory where they fit: transpile/cuda/atomics.py),
with ``TRANSPILE_PRIVATE_BINS_BYTES=0`` (global atomic bins), and the ``--naive`` build (one
thread, the form before) at the smallest size only.
CUDA events around ``histogram_device`` on cupy arrays, median of 20 after 3 warm-up calls.  Few
bins contend: with global bins every thread's update of one of 16 bins serialises in the L2.

    python bench/experiments/histogram.py --generate DIR      # here: transpile (needs the front end)
    python3 bench/experiments/histogram.py --run DIR          # on the GPU machine: nvcc, cupy
"""

from __future__ import annotations

import argparse
import ctypes
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grid_reduce import _median_ms  # noqa: E402

SOURCE = """void histogram(int n, int nbins, const int data[n], int hist[nbins])
{
  for (int i = 0; i < n; i++)
    hist[(data[i] % nbins + nbins) % nbins] += 1;
}
"""
SIZES = (1 << 20, 1 << 24, 1 << 26)
BINS = (16, 256, 4096, 65536)


def generate(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    c = out / "histogram.c"
    c.write_text(SOURCE)
    for label, extra in (("", []), (".naive", ["--naive"])):
        subprocess.run([sys.executable, "-m", "transpile.cli", str(c), "-o", str(out / f"histogram{label}.cu"),
                        *extra], check=True)
        print(out / f"histogram{label}.cu")


def run(out: Path) -> None:
    import cupy as cp
    import numpy as np

    fns = {}
    for label in ("", ".naive"):
        so = out / f"libhistogram{label}.so"
        subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-shared", "-Xcompiler", "-fPIC", "-o", str(so),
                        str(out / f"histogram{label}.cu")], check=True)
        fn = ctypes.CDLL(str(so)).histogram_device
        fn.restype = ctypes.c_int
        fns[label] = fn
    print("| n | bins | build | ms | GB/s (data read) | G updates/s | correct |")
    print("|---|---|---|---|---|---|---|")
    stream = ctypes.c_void_p(cp.cuda.get_current_stream().ptr)
    for n in SIZES:
        data = cp.asarray(np.random.default_rng(n).integers(-(1 << 30), 1 << 30, n, dtype=np.int32))
        copy = cp.empty_like(data)
        ms = _median_ms(lambda: copy.__setitem__(slice(None), data))  # noqa: B023
        print(f"| {n} | - | device copy of the data | {ms:.4g} | {2 * data.nbytes / ms / 1e6:.0f} | - | - |")
        for bins in BINS:
            want = cp.bincount((data % bins + bins) % bins, minlength=bins).astype(cp.int32)
            for label, env, name in (("", None, "as emitted (shared bins up to 32 KiB)"),
                                     ("", "0", "global atomic bins (TRANSPILE_PRIVATE_BINS_BYTES=0)"),
                                     (".naive", None, "one thread (--naive)")):
                if label == ".naive" and n != SIZES[0]:
                    continue
                if env is None:
                    os.environ.pop("TRANSPILE_PRIVATE_BINS_BYTES", None)
                else:
                    os.environ["TRANSPILE_PRIVATE_BINS_BYTES"] = env
                fn = fns[label]
                hist = cp.zeros(bins, dtype=cp.int32)
                args = (ctypes.c_int(n), ctypes.c_int(bins), ctypes.c_void_p(data.data.ptr),
                        ctypes.c_void_p(hist.data.ptr), stream)
                rc = fn(*args)
                cp.cuda.get_current_stream().synchronize()
                ok = rc == 0 and bool((hist == want).all())
                ms = _median_ms(lambda: fn(*args), *((1, 3) if label else (3, 20)))  # noqa: B023
                print(f"| {n} | {bins} | {name} | {ms:.4g} | {data.nbytes / ms / 1e6:.0f} | {n / ms / 1e6:.2f} | {ok} |")
            os.environ.pop("TRANSPILE_PRIVATE_BINS_BYTES", None)
            ms = _median_ms(lambda: cp.bincount((data % bins + bins) % bins, minlength=bins))  # noqa: B023
            print(f"| {n} | {bins} | cupy.bincount (with the modulo) | {ms:.4g} | {data.nbytes / ms / 1e6:.0f} | "
                  f"{n / ms / 1e6:.2f} | - |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--generate", type=Path, metavar="DIR")
    ap.add_argument("--run", type=Path, metavar="DIR")
    args = ap.parse_args()
    if args.generate:
        generate(args.generate)
    if args.run:
        run(args.run)


if __name__ == "__main__":
    main()

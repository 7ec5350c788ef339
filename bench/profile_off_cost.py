"""What the structural profile costs a verification that does not ask for it: one simulated call of a
drop-in with the simulator's headers of another revision (before the profile) and with this
checkout's (the profile off), interleaved, best and median of the repetitions; then the same call
profiled (transpile/verify/profile.py's ``profile_function``, a forked child, objdump included).

    PYTHONPATH=. python bench/profile_off_cost.py --rev d05c9f9 \
        tests/profile_pairs/transpose_padded.cu transpose 512 [--reps 3]

The call is ``NAME(n, a, b)`` with ``a``, ``b`` n x n float32 arrays (the shape of the transpose
and copy pairs' drop-ins).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def headers_at(rev: str) -> Path:
    """The simulator's include directory as it was at git revision ``rev``, in a temporary directory."""
    out = Path(tempfile.mkdtemp(prefix=f"sim-include-{rev}-"))
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", rev, "transpile/sim/include/"],
                           capture_output=True, text=True, check=True).stdout.split()
    for name in names:
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{name}"], capture_output=True, text=True,
                              check=True).stdout
        (out / Path(name).name).write_text(text)
    return out


def main() -> int:
    """Print the best and median seconds of the call with each header set, and the profiled call's."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cu", type=Path)
    ap.add_argument("name")
    ap.add_argument("n", type=int)
    ap.add_argument("--rev", required=True, help="a revision before the profile (its headers are the baseline)")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()

    import numpy as np

    from transpile.sim import SimLibrary
    from transpile.verify.proc import fork_stream
    from transpile.verify.profile import profile_function

    build: Any = importlib.import_module("transpile.sim.build")  # the module (the package exports build())
    new = build.INCLUDE_DIR
    libs = {}
    out = Path(tempfile.mkdtemp(prefix="profile-off-cost-"))
    for tag, inc in (("before", headers_at(args.rev)), ("now, profile off", new)):
        build.INCLUDE_DIR = inc
        build._header_text.cache_clear()
        build.known_api.cache_clear()
        libs[tag] = str(build.build(args.cu, out, extra_flags=("-U_FORTIFY_SOURCE",)).library)
    build.INCLUDE_DIR = new
    build._header_text.cache_clear()
    build.known_api.cache_clear()
    rng = np.random.default_rng(0)
    a = rng.random((args.n, args.n), dtype=np.float32)
    b = np.zeros((args.n, args.n), np.float32)

    def timed(lib: str) -> list[float]:
        def child(send: Any) -> None:
            sim = SimLibrary(lib)
            sim.set_quiet(True)
            times = []
            for _ in range(2):
                t0 = time.perf_counter()
                sim.call(args.name, args.n, a, b, restype=None)
                times.append(time.perf_counter() - t0)
            send(("t", times))

        msgs, _, err = fork_stream(child, timeout=600, what=args.name)
        assert msgs, err
        return list(msgs[0][1])

    res: dict[str, list[float]] = {k: [] for k in libs}
    for _ in range(args.reps):
        for tag, lib in libs.items():
            res[tag] += timed(lib)
    t0 = time.perf_counter()
    profile_function(libs["now, profile off"], args.name, args.n, a, b)
    prof = time.perf_counter() - t0
    print(f"{args.cu.name} {args.name}({args.n}, ...): simulated call, best / median of {2 * args.reps}")
    for tag, ts in res.items():
        print(f"  {tag:<18} {min(ts):7.3f} s / {statistics.median(ts):7.3f} s")
    print(f"  profiled (one call, fork and objdump included) {prof:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

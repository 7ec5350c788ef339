"""Fuzz the parallelization passes: random affine nests, shuffled vs sequential.

    python tests/fuzz_passes.py [N]      (default 10000 cases)

Runs the same property as tests/test_parallel_semantics.py with N examples;
on a miscompile, Hypothesis shrinks it and this prints the minimal kernel in
IR text form with the failing size and seed.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tests import affine_nests  # noqa: E402
from tests.test_parallel_semantics import check_case  # noqa: E402
from transpile import text  # noqa: E402


def main(n: int) -> int:
    failures: list[str] = []
    done = [0]
    start = time.time()

    def report_and_exit(signum: int, frame: object) -> None:
        # Stopped early (timeout, Ctrl-C): say how far it got.
        print(f"stopped after {done[0]} cases, no miscompile ({time.time() - start:.0f} s)", flush=True)
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, report_and_exit)
    signal.signal(signal.SIGINT, report_and_exit)

    @settings(max_examples=n, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(affine_nests.kernels(), st.integers(1, 5), st.integers(0, 2**16))
    def prop(k, size, seed):  # type: ignore[no-untyped-def]
        try:
            check_case(k, size, seed)
        except AssertionError as e:
            failures.append(f"{e}\nn={size} seed={seed}\n{text.show(k)}")
            raise
        done[0] += 1

    try:
        prop()
    except AssertionError:
        print("MISCOMPILE (minimal example, after shrinking):")
        print(failures[-1])
        return 1
    print(f"{n} cases, no miscompile ({time.time() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))

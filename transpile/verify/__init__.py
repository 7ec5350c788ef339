"""The verifier: is a CUDA file a correct, honest drop-in for a C (or IR) reference?

A generated kernel is only as good as the check that passed it, so the checks
are built to be hard to game (docs/verify.md): inputs are synthesised from the
reference's typed signature with a fresh, printed seed; every run gets its own
copies, poisoned outputs and guard zones; results are compared with the fp64
reference under a tolerance set by dtype and reduction depth; second inputs,
repeated calls, shuffled schedules, stream and race audits catch cached,
hard-coded and racy results.  Stages run in order and stop at the first
failure: (a) front end and signature, (b) nvcc, (c) the CUDA on the CPU
simulator, (d)-(f) GPU runs and timing (skipped, never passed, without a GPU).

    from transpile.verify import verify_file, Options
    report = verify_file(Path("k.cu"), Path("ref.c"), options=Options(seed=1))
    report.ok, report.reason, report.dumps()
"""

from __future__ import annotations

from transpile.verify.report import Progress, Report, Stage
from transpile.verify.stages import Options, verify_file, verify_module

__all__ = ["Options", "Progress", "Report", "Stage", "verify_file", "verify_module"]

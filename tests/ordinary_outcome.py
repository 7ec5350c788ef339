"""What the compiler made of one loop of the ordinary-C corpus (tests/ordinary/), read from the mapped IR.

Each corpus file starts with ``// expect: OUTCOME``: ``parallel V`` (a loop over ``V`` runs spread over
GPU threads: a ``par`` loop of a launch), ``reduction`` (some loop is a parallel reduction), ``scan`` (a
prefix computation run as a blocked scan: passes/scan.py's chunk loops are ``par`` loops of launches),
``sequential`` (no loop may run in parallel), or ``error: TEXT`` (refused with a located message
containing TEXT).
:func:`outcome` compiles the file in process (no verification: tests/test_ordinary.py checks results
separately) and says which loops came out parallel.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from transpile import ir, pipeline
from transpile.diagnostics import TranspileError

CORPUS = Path(__file__).resolve().parent / "ordinary"


@dataclass
class Outcome:
    """Parallel loop variables, whether a reduction or atomic loop was made, or the refusal's text."""

    par: set[str] = field(default_factory=set)
    reduction: bool = False
    scan: bool = False
    error: str | None = None
    module: ir.Module | None = None
    lowered: ir.Module | None = None


def expectation(path: Path) -> str:
    """The file's ``// expect:`` line."""
    m = re.search(r"^// expect: (.+)$", path.read_text(), re.M)
    assert m, f"{path} has no '// expect:' line"
    return m.group(1).strip()


@functools.cache
def outcome(path: Path) -> Outcome:
    """Front end and default pipeline over ``path``'s function named as the file (computed once a
    process: the outcome test and the results test share it)."""
    from transpile.frontend import c as cfront

    try:
        module = cfront.parse_file(str(path), function=path.stem)
        lowered = pipeline.lower(module)
    except TranspileError as e:
        return Outcome(error=str(e))
    got = Outcome(module=module, lowered=lowered)
    for k in lowered.kernels:
        # a launch of the serial form runs in one thread whatever its loops are marked
        serial = {id(n) for launch in ir.statements(k) if isinstance(launch, ir.Launch)
                  and launch.form is ir.LaunchForm.SERIAL for n in ir.statements(launch)}
        for s in ir.statements(k):
            if isinstance(s, ir.For) and id(s) not in serial:
                if s.reduce:
                    got.reduction = True
                elif s.par is not None and s.var.startswith("chunk"):  # passes/scan.py's chunk loops
                    got.scan = True
                elif s.par is not None:  # a map, or a scatter whose updates are atomic (a histogram)
                    got.par.add(s.var)
    return got


def meets(expect: str, got: Outcome) -> bool:
    """Does ``got`` satisfy ``expect``?"""
    if expect.startswith("error:"):
        return got.error is not None and expect[len("error:"):].strip() in got.error
    if got.error is not None:
        return False
    if expect.startswith("parallel "):
        return expect.split()[1] in got.par
    if expect == "reduction":
        return got.reduction
    if expect == "scan":
        return got.scan
    if expect == "sequential":
        return not got.par and not got.reduction and not got.scan
    raise AssertionError(f"unknown expectation {expect!r}")

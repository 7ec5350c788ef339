"""The compile sequence, once: front end, front-end checks, pipeline, emission, verification.

``compile(path, Options(...)) -> Result`` is what ``transpile FILE`` does short of printing and
writing; the command line, ``transpile --from-text``, the dataset export and the schedule search
call the pieces below instead of repeating them:

* :func:`load` -- the front end (C or IR text) and the checks every compile makes of the input:
  a local read before any assignment is an error (a possible one a warning, ``uninitialized``),
  references proven out of bounds are warnings (``out-of-bounds``), pointers indexed by hand that
  delinearize cannot split are warnings (``flat-index``);
* :func:`lower` and :func:`emit` -- the default pipeline and the CUDA back end (with each
  drop-in's host path, from the module the front end made);
* :func:`verify` -- the verifier's quick mode on the emitted text, and :func:`refusal`, the error a
  report is under a verification policy (``error``: anything but a pass; ``warn``: a failure only).

``Options`` is frozen and hashable: one value says how a file was compiled.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transpile import ir
from transpile.diagnostics import TranspileError

if TYPE_CHECKING:
    from passes.budget import Budget
    from passes.tile import Options as Tiling
    from transpile.verify.report import Report

POLICIES = ("error", "warn", "off")


@dataclass(frozen=True)
class Options:
    """How to compile: the front end's inputs, the pipeline's switches, the back end's tiling, and
    the verification policy (``error``, ``warn`` or ``off``)."""

    function: str | None = None
    include_dirs: tuple[str, ...] = ()
    defines: tuple[str, ...] = ()
    checks: bool = True
    naive: bool = False
    reassociate: bool = True
    fuse: bool = True
    tiling: Tiling | None = None
    budget: Budget | None = None
    verify_each: bool = True
    dump_ir: Path | None = None
    verify: str = "error"
    host_path: bool = True

    def __post_init__(self) -> None:
        assert self.verify in POLICIES, f"verification policy {self.verify!r} is not one of {POLICIES}"


@dataclass(frozen=True)
class Result:
    """A compile's products: the front end's module, the lowered module, the CUDA, the reports."""

    module: ir.Module
    lowered: ir.Module
    text: str
    reports: tuple[Report, ...] = field(default=())


def compile(path: Path, options: Options = Options()) -> Result:  # noqa: A001 (the driver's one verb)
    """``path`` compiled to CUDA under ``options``; raises :class:`TranspileError` for bad input and,
    under the ``error`` and ``warn`` policies, for a verification the policy refuses."""
    module = load(path, options)
    lowered = lower(module, options)
    text = emit(module, lowered, path.name, options)
    reports = verify(module, lowered, text, path, options)
    for r in reports:
        problem = refusal(r, options.verify)
        if problem is not None:
            raise problem
    return Result(module, lowered, text, tuple(reports))


def load(path: Path, options: Options = Options()) -> ir.Module:
    """The front end's module for ``path`` (C or IR text), after the input checks (``options.checks``)."""
    from transpile import frontend, progress

    progress.stage("front end")
    module = frontend.load(path, function=options.function, include_dirs=options.include_dirs,
                           defines=options.defines)
    if options.checks:
        check_input(module)
    return module


def check_input(module: ir.Module) -> None:
    """The checks every compile makes of its input (see the module docstring)."""
    check_uninit(module)
    check_bounds(module)
    check_flat(module)


def lower(module: ir.Module, options: Options = Options()) -> ir.Module:
    """The default pipeline over ``module`` (``transpile.pipeline.lower``) under ``options``."""
    from transpile import pipeline

    return pipeline.lower(module, verify_each=options.verify_each, dump_ir=options.dump_ir, naive=options.naive,
                          reassociate=options.reassociate, fuse=options.fuse, budget=options.budget,
                          tiling=tiling(options))


def tiling(options: Options) -> Tiling | None:
    """The back end's options of ``options`` (``--no-reassociate`` reaches the tiled kernels too)."""
    if options.reassociate:
        return options.tiling
    from passes.tile import Options as Tiling

    return replace(options.tiling or Tiling(), reassociate=False)


def emit(module: ir.Module, lowered: ir.Module, source: str, options: Options = Options()) -> str:
    """The CUDA of ``lowered`` (``source``: the input's file name for the header line); each drop-in
    gets its host path from ``module`` unless ``options.host_path`` is off."""
    from transpile import cuda, progress

    progress.stage("emitting CUDA")
    return cuda.emit(lowered, source=source, tiling=tiling(options), host=module if options.host_path else None)


def verify(module: ir.Module, lowered: ir.Module, text: str, reference: Path, options: Options = Options()
           ) -> list[Report]:
    """The verifier's reports on ``text`` against ``reference`` (quick mode; none under policy ``off``)."""
    if options.verify == "off":
        return []
    from transpile import progress
    from transpile.verify import Options as VerifyOptions
    from transpile.verify import verify_module

    progress.stage("verifying")
    return verify_module(module, text, source=reference, lowered=lowered, function=options.function,
                         include_dirs=options.include_dirs, defines=options.defines,
                         options=VerifyOptions(mode="quick", full_seeds=1, sanitizer=False))


def refusal(report: Any, policy: str, *, replay: str = "") -> TranspileError | None:
    """The error ``report`` is under ``policy``: a failure always (but under ``off``), anything else
    but a pass under ``error``; None when the output may be written."""
    if policy == "off" or report.verdict == "pass":
        return None
    if report.verdict == "fail":
        again = f" ({replay} --function {report.kernel} --seed {report.seed})" if replay else ""
        return TranspileError(None, f"verification of the generated CUDA for '{report.kernel}' failed: "
                                    f"{report.reason}{again}")
    if policy == "error":
        return TranspileError(None, f"generated CUDA for '{report.kernel}' not verified: {report.reason} (no output "
                                    "written; --verify=warn writes it anyway, --no-verify skips the check)")
    return None


def check_uninit(module: ir.Module) -> None:
    """Refuse a local read before any assignment on every path to the read; warn (``uninitialized``)
    where only some paths read it so (passes/uninit.py)."""
    from passes import uninit
    from transpile.diagnostics import warn
    from transpile.guard import source_of

    for kernel in module.kernels:
        found = uninit.check(kernel)
        for f in found:
            if f.definite:
                raise TranspileError(f.loc, f.message, source=source_of(f.loc))
        for f in found:
            warn("uninitialized", f.loc, f.message)


def check_bounds(module: ir.Module) -> None:
    """Warn (``out-of-bounds``) about every reference proven to leave its array for sizes the program
    can be called with.  Where fixed extents (``double C[NI][NJ]`` from macros) bound the sizes
    (``int ni`` loop bounds), the references that leave them only for larger sizes are one note per
    kernel stating the assumption (``passes.bounds.extent_limits``), not a warning each: the program
    is written for sizes within its declared arrays, and the verifier tests only those."""
    from passes import bounds
    from transpile.diagnostics import warn

    for kernel in module.kernels:
        found = bounds.check(kernel)
        limits = bounds.extent_limits(kernel, found)
        for f in found:
            if not limits or f.holds_within(limits):
                warn("out-of-bounds", f.loc, f.message)
        if limits:
            where = f"{kernel.loc}: " if kernel.loc is not None else ""
            assumed = ", ".join(f"{name} <= {value}" for name, value in limits.items())
            print(f"{where}note: '{kernel.name}' assumes {assumed}, the declared extents (larger sizes index "
                  "outside its arrays; the verifier tests sizes within them)", file=sys.stderr)


def check_flat(module: ir.Module) -> None:
    """Warn (``flat-index``) about pointers indexed by hand that delinearize cannot split."""
    from passes import delinearize
    from transpile.diagnostics import warn

    for kernel in module.kernels:
        for r in delinearize.refusals(kernel):
            warn("flat-index", r.loc, r.message)

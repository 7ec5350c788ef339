"""The progressive stages, in order, stopping at the first failure.

(a) front end and IR checks: the reference parses and passes ``ircheck``
    (for the pipeline, the lowered kernel IR too); the candidate defines
    ``extern "C" void NAME(...)`` with the reference's parameters.
(b) ``nvcc -arch=sm_90 -cubin -Xptxas -v``: compiles (an architecture-dependent file also for
    sm_75 and sm_80: :mod:`transpile.cuda.arches`), and ptxas's resource
    report (registers, shared memory, spills, stack per kernel) is recorded.
(c) the CUDA itself on the CPU simulator, small shapes (:mod:`.simstage`).
(d)-(f) on a GPU (:mod:`.gpu`): small shapes, full size with several
    seeds, timing.  Without a GPU they are *skipped*, never passed.

:func:`verify_file` is the entry point for ``transpile verify``;
:func:`verify_module` is the pipeline's (emitted text, front-end IR).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from transpile import ir
from transpile.diagnostics import TranspileError
from transpile.fsutil import write_atomic
from transpile.toolchain import nvcc, parse_ptxas
from transpile.verify.reference import (
    GccReference,
    InterpReference,
    Reference,
    ReferenceBuildError,
    cache_dir,
    cache_file,
)
from transpile.verify.report import FAIL, NOT_RUN, PASS, SKIP, Progress, Report, Stage
from transpile.verify.signature import KernelSig, check_dropin, dropin_returns, find_dropin, kernel_sig


@dataclass
class Options:
    """How to verify.

    ``mode`` ``quick`` (the compile-time check: few small shapes) or ``full``;
    ``sizes`` the requested full sizes (size parameter -> value; others default);
    ``stages`` the stage keys to attempt; ``gpu`` None to detect, or forced;
    ``sim_work`` caps the statement executions of a stage (c) shape (None: the mode's
    budget, ``simstage.WORK_BUDGET``): a caller whose point is made by small shapes
    (a test of one emitter path) need not pay for the largest.
    """

    seed: int | None = None
    mode: str = "full"
    sizes: dict[str, int] = field(default_factory=dict)
    stages: str = "abcdef"
    gpu: bool | None = None
    full_seeds: int = 3
    sanitizer: bool = True
    sim_timeout: float = 120.0
    sim_work: float | None = None
    profile: bool = False  # the structural profile after stage (c) passed (transpile/verify/profile.py)
    progress: Progress = field(default_factory=lambda: Progress(False))


@dataclass
class Target:
    """What is verified: the candidate file and everything known about the reference."""

    cu: Path
    sig: KernelSig
    kernel: ir.Kernel
    module: ir.Module
    reference: Reference
    lowered: ir.Module | None = None


def new_seed() -> int:
    """A fresh seed for a run (printed in the report, replayed with ``--seed``)."""
    return secrets.randbits(31)


# ---------------------------------------------------------------------------
# Stage (a)


def _pick_kernel(module: ir.Module, function: str | None, where: str) -> ir.Kernel:
    if function is not None:
        k = next((k for k in module.kernels if k.name == function), None)
        if k is None:
            names = ", ".join(k.name for k in module.kernels) or "none"
            raise TranspileError(None, f"{where}: no kernel named '{function}' (kernels: {names})")
        return k
    if len(module.kernels) != 1:
        names = ", ".join(k.name for k in module.kernels) or "none"
        raise TranspileError(None, f"{where} defines {len(module.kernels)} kernels ({names}): choose one with --function")
    return module.kernels[0]


def make_reference(sig: KernelSig, module: ir.Module, source: Path | None, *, include_dirs: Sequence[str] = (),
                   defines: Sequence[str] = (), report: Report | None = None) -> Reference:
    """gcc for C sources (falling back to the interpreter if gcc cannot build it), the interpreter for IR."""
    if source is not None and source.suffix in (".c", ".h", ".i") and shutil.which("gcc"):
        try:
            return GccReference(sig, source, function=sig.name, include_dirs=include_dirs, defines=defines)
        except ReferenceBuildError as e:
            if report is not None:
                report.note(f"gcc could not build the reference ({str(e).splitlines()[0]}); using the IR interpreter")
    return InterpReference(sig, module, source.name if source is not None else "")


def _check_candidate(stage: Stage, cu: Path, sig: KernelSig, report: Report | None = None) -> bool:
    """The drop-in's signature: the compiler's reading (:mod:`.symbols`), else (no nvcc, or the file
    does not compile, which stage (b) reports) the text's."""
    from transpile.verify import symbols

    try:
        text = cu.read_text()
    except (OSError, UnicodeDecodeError) as e:
        stage.status, stage.check, stage.message = FAIL, "signature", f"cannot read {cu}: {e}"
        return False
    compiled = symbols.check(cu, sig)
    if compiled is not None:
        if compiled.problems:
            stage.status, stage.check, stage.message = FAIL, "signature", "; ".join(compiled.problems)
            stage.details["compiler"] = compiled.output[-4000:]
            return False
        return True
    if report is not None:
        report.note("stage (a): the drop-in's signature was read from the text (no nvcc, or nvcc could not "
                    "compile the file)")
    params, extern_c = find_dropin(text, sig.name)
    if params is None:
        stage.status, stage.check = FAIL, "signature"
        stage.message = f"{cu.name} defines no function '{sig.name}' (the drop-in extern \"C\" host function)"
        return False
    if not extern_c:
        stage.status, stage.check = FAIL, "signature"
        stage.message = f"'{sig.name}' is not extern \"C\": its C++-mangled name cannot replace the C function"
        return False
    problems = check_dropin(sig, params, dropin_returns(text, sig.name) if sig.ret is not None else None)
    if problems:
        stage.status, stage.check, stage.message = FAIL, "signature", "; ".join(problems)
        return False
    return True


def stage_a(report: Report, *, cu: Path, module: ir.Module | None, reference_path: Path | None,
            function: str | None, include_dirs: Sequence[str], defines: Sequence[str],
            lowered: ir.Module | None) -> Target | None:
    """Stage (a); returns the target for the later stages, or None after a failure."""
    from transpile import frontend
    from transpile.ir import check as ircheck

    stage = report.stage("a")
    t0 = time.perf_counter()
    try:
        if module is None:
            assert reference_path is not None
            module = frontend.load(reference_path, function=function, include_dirs=include_dirs, defines=defines)
        ircheck.check(module)
        kernel = _pick_kernel(module, function, str(reference_path or "the reference"))
        if lowered is not None:
            ircheck.check(lowered)
    except TranspileError as e:
        stage.status, stage.check, stage.message = FAIL, "front-end", e.headline
        stage.seconds = time.perf_counter() - t0
        return None
    sig = kernel_sig(kernel)
    report.kernel = sig.name
    ok = _check_candidate(stage, cu, sig, report)
    reference = make_reference(sig, module, reference_path, include_dirs=include_dirs, defines=defines,
                               report=report)
    report.reference = reference.description
    stage.seconds = time.perf_counter() - t0
    if not ok:
        return None
    stage.status = PASS
    shown = ", ".join(a.name for a in sig.args if a.name != sig.ret)
    returns = "" if sig.ret is None else f" (its result compared as '{sig.ret}')"
    stage.message = (f"reference {sig.name}({shown}){returns} and the candidate's drop-in "
                     f"agree; sizes: {', '.join(sig.size_params) or 'none'}")
    return Target(cu, sig, kernel, module, reference, lowered)


# ---------------------------------------------------------------------------
# Stage (b)


def stage_b(report: Report, cu: Path) -> None:
    """Stage (b): nvcc compile for sm_90 and the resource report (cached by content); an
    architecture-dependent file also for sm_75 and sm_80 (docs/architectures.md)."""
    stage = report.stage("b")
    t0 = time.perf_counter()
    exe = nvcc()
    if exe is None:
        stage.status, stage.message = SKIP, "nvcc not found"
        return
    from transpile.verify import symbols

    text = cu.read_bytes()
    log, key = symbols.sm90_record(cu, text, exe)  # also written by stage (a)'s compile
    if log.exists():
        ok, output = True, log.read_text()
    else:
        with tempfile.TemporaryDirectory() as d:  # the record is ptxas's report; the cubin is not kept
            try:
                proc = subprocess.run([exe, "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o", str(Path(d) / "k.cubin"),
                                       str(cu)], capture_output=True, text=True, timeout=600)
                ok, output = proc.returncode == 0, proc.stdout + proc.stderr
            except subprocess.TimeoutExpired:
                ok, output = False, "nvcc timed out after 600 s"
        if ok:
            write_atomic(log, output)
    stage.seconds = time.perf_counter() - t0
    if not ok:
        errors = [ln.strip() for ln in output.splitlines() if "error" in ln]
        stage.status, stage.check = FAIL, "compile"
        stage.message = "nvcc: " + (errors[0] if errors else output.strip().splitlines()[-1] if output.strip() else "failed")
        stage.details["output"] = output[-4000:]
        return
    older = _older_arches(exe, cu, text, key)  # a file that may build for sm_90 only: sm_75 and sm_80 too
    if older is not None:
        stage.status, stage.check, stage.message = FAIL, "compile", older
        return
    report.resources = parse_ptxas(output)
    stage.status = PASS
    spills = sum(r.get("spill_stores", 0) + r.get("spill_loads", 0) for r in report.resources)
    stage.message = (f"{len(report.resources)} kernel(s), max {max([r.get('registers', 0) for r in report.resources] + [0])}"
                     f" registers{', spills' if spills else ''}")
    if spills:
        report.note(f"ptxas reports {spills} bytes of register spills")


def _older_arches(exe: str, cu: Path, text: bytes, key: str) -> str | None:
    """For a file whose code may depend on the architecture (:func:`transpile.cuda.arches.arch_dependent`):
    ``nvcc -fatbin`` for :data:`transpile.cuda.arches.VERIFY_ARCHES` (cached by content); the failure's message, or None."""
    from transpile.cuda import arches

    if not arches.arch_dependent(text.decode(errors="replace")):
        return None
    flags = arches.gencode(arches.VERIFY_ARCHES)
    done = cache_dir("nvcc") / f"{cu.stem}-{key}-sm{'-'.join(map(str, arches.VERIFY_ARCHES))}.ok"
    if done.exists():
        return None
    with tempfile.TemporaryDirectory() as d:
        try:
            # -fatbin: the device code alone (what differs between targets), no host compile.
            proc = subprocess.run([exe, *flags, "-fatbin", "-o", str(Path(d) / "k.fatbin"), str(cu)],
                                  capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return "nvcc timed out after 600 s (sm_75, sm_80)"
    if proc.returncode != 0:
        out = proc.stdout + proc.stderr
        errors = [ln.strip() for ln in out.splitlines() if "error" in ln]
        where = ", ".join(f"sm_{a}" for a in arches.VERIFY_ARCHES)
        return f"nvcc ({where}): " + (errors[0] if errors else out.strip().splitlines()[-1] if out.strip() else "failed")
    done.touch()
    return None


# ---------------------------------------------------------------------------
# Driver


def resolve_sizes(sizes: dict[str, int], sig: KernelSig, report: Report) -> dict[str, int]:
    """Requested sizes by size parameter (``*`` stands for all of them); unknown names are noted."""
    req = dict(sizes)
    if "*" in req:
        every = req.pop("*")
        req = {**dict.fromkeys(sig.size_params, every), **req}
    for name in sorted(set(req) - set(sig.size_params)):
        report.note(f"--size {name}: {sig.name} has no size parameter '{name}' "
                    f"(size parameters: {', '.join(sig.size_params) or 'none'})")
        del req[name]
    return req


def _run_stages(report: Report, target: Target, opts: Options) -> None:
    from transpile.verify import gpu, simstage

    progress = opts.progress
    seed = report.seed
    opts.sizes = resolve_sizes(opts.sizes, target.sig, report)
    order = [k for k in "bcdef" if k in opts.stages]
    gpu_info: gpu.GpuInfo | None = None
    for key in order:
        stage = report.stage(key)
        if key in "def":
            if gpu_info is None:
                gpu_info = gpu.detect(opts.gpu)
            if not gpu_info.available:
                stage.status, stage.message = SKIP, gpu_info.reason
                progress.done(stage)
                continue
        progress.start(stage)
        t0 = time.perf_counter()
        if key == "b":
            stage_b(report, target.cu)
        elif key == "c":
            simstage.run_stage(stage, report, cu=target.cu, sig=target.sig, kernel=target.kernel,
                               reference=target.reference, seed=seed, mode=opts.mode,
                               requested=opts.sizes or None, nvcc_ok=report.stage("b").status == PASS,
                               timeout=opts.sim_timeout, work=opts.sim_work)
        else:
            gpu.run_stage(key, stage, report, target, opts)
        stage.seconds = stage.seconds or time.perf_counter() - t0
        progress.done(stage)
        if stage.status == FAIL or stage.status == "inconclusive":
            return
        if key == "c" and opts.profile and stage.status == PASS and report.profile_input is not None:
            _profile(report, target, opts, stage.seconds)
        elif key == "c" and opts.profile:
            report.note(f"profile: not measured (stage (c) {stage.status}: the profile runs the simulator's "
                        "build of a candidate stage (c) accepted)")
        if key == "c" and not opts.profile:
            report.profile_input = None  # stage (c)'s inputs are not kept alive for nothing


def _profile(report: Report, target: Target, opts: Options, stage_c_seconds: float) -> None:
    """The structural profile of the candidate stage (c) accepted (``Options.profile``)."""
    from transpile.verify import profile

    assert report.profile_input is not None, "stage (c) passed without an input to profile"
    library, inputs, shape, _ = report.profile_input
    t0 = time.perf_counter()
    profile.run_profile(report, library, target.sig, inputs, shape, timeout=opts.sim_timeout)
    if report.profile is not None:
        report.note(f"profile: {time.perf_counter() - t0:.2f} s at {shape} (stage (c): {stage_c_seconds:.2f} s)")


def verify_file(cu: Path, reference: Path, *, function: str | None = None, include_dirs: Sequence[str] = (),
                defines: Sequence[str] = (), options: Options | None = None) -> Report:
    """Verify candidate ``cu`` (any CUDA file defining the drop-in) against ``reference`` (.c or .ir)."""
    opts = options or Options()
    seed = opts.seed if opts.seed is not None else new_seed()
    report = Report(kernel=function or "?", candidate=str(cu), reference=str(reference), seed=seed)
    stage = report.stage("a")
    opts.progress.start(stage)
    target = stage_a(report, cu=cu, module=None, reference_path=reference, function=function,
                     include_dirs=include_dirs, defines=defines, lowered=None)
    opts.progress.done(stage)
    if target is not None:
        _run_stages(report, target, opts)
    _mark_not_run(report)
    return report


def verify_module(module: ir.Module, cu_text: str, *, source: Path, lowered: ir.Module | None = None,
                  function: str | None = None, include_dirs: Sequence[str] = (), defines: Sequence[str] = (),
                  options: Options | None = None) -> list[Report]:
    """Verify the pipeline's output ``cu_text`` for every kernel of ``module`` (front-end IR of ``source``)."""
    opts = options or Options(mode="quick", full_seeds=1, sanitizer=False)
    seed = opts.seed if opts.seed is not None else new_seed()
    cu = cache_file("emitted", source.stem, cu_text)
    reports = []
    for k in module.kernels:
        report = Report(kernel=k.name, candidate=f"transpile output for {source.name}", reference=str(source),
                        seed=seed)
        target = stage_a(report, cu=cu, module=module, reference_path=source, function=k.name,
                         include_dirs=include_dirs, defines=defines, lowered=lowered)
        if target is not None:
            _run_stages(report, target, opts)
        _mark_not_run(report)
        reports.append(report)
        if report.verdict == "fail":
            break
    return reports


def _mark_not_run(report: Report) -> None:
    for s in report.stages.values():
        if s.status == NOT_RUN and not s.message:
            s.message = "not reached" if report.failure is not None else ""

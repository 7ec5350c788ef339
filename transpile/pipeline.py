"""The default lowering pipeline, one pass a line.

``lower(module)`` takes front-end IR (from C or from the text form) to the
mapped IR that :mod:`transpile.cuda` emits.  With ``verify_each`` the IR
invariants are checked after every pass; with ``dump_ir`` the IR after every
pass is written as ``DIR/NN-<pass>.ir``.  With ``budget`` (the command line's
``--max-pass-seconds``, ``--max-seconds``, ``--max-memory``) each pass but map-gpu
runs under :mod:`passes.budget`: one that would run past its share stops with
the IR it has (correct, less optimised) and a ``pass-budget`` warning names it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from transpile import ir, progress
from transpile.ir import check as ircheck

if TYPE_CHECKING:
    from passes import tile
    from passes.budget import Budget


def lower(module: ir.Module, *, verify_each: bool = True, dump_ir: Path | None = None,
          naive: bool = False, reassociate: bool = True, fuse: bool = True,
          budget: Budget | None = None, tiling: tile.Options | None = None) -> ir.Module:
    """Run the default pipeline over every kernel of ``module``.

    ``naive`` keeps the foundation's mapping only: map-gpu alone, one thread per
    iteration of the parallel loops it marks, with no restructuring or tiling pass
    before it (the baseline ``bench/gpu.py`` measures speedups against).  Every
    other pass is skipped when it is set.

    ``reassociate=False`` (``--no-reassociate``) keeps float ``+``/``*``
    reductions sequential (reduce-gpu does not mark them).  ``fuse=False`` skips
    the fusion pass (a schedule knob of ``--evolve``: fewer launches are not
    always faster).  ``tiling``: the back end's options, under which launch-forms decides each
    launch's form (the options the module will be emitted with).
    """
    from passes import (
        argreduce,
        closure,
        constprop,
        delinearize,
        distribute,
        expand,
        forward,
        hoist,
        ifreduce,
        induction,
        interchange,
        launch_forms,
        map_gpu,
        normalize,
        peel,
        privatize,
        reduce_gpu,
        reschedule,
        scan,
        search,
        sink_guard,
        snapshot,
        wavefront,
        wraparound,
    )
    from passes import fuse as fusion

    step = _Stepper(verify_each=verify_each, dump_ir=dump_ir, budget=budget)
    ircheck.check(module)  # front ends must hand over valid IR
    step.checked = module
    step.dump("input", module)
    if naive:  # NOTE: the baseline: no pass but map-gpu may run here
        return step("map-gpu", module, lambda k: map_gpu.run(k, atomics=False), required=True)  # one thread an iteration
    # NOTE: distribute before interchange: splitting a loop body exposes the
    # perfect nests that interchange (and map-gpu's par marking) need.
    # NOTE: delinearize first: every pass after it asks the dependence test, which is exact for
    # A[i][j] and must assume the worst of a hand-flattened A[i * m + j].
    # NOTE: constprop first: every pass after it asks the dependence test, which sees through a
    # subscript only where locals copied into it ('int k = 5; a[i + k]') have been replaced.
    module = step("constprop", module, constprop.run)
    # NOTE: hoist after constprop (which keeps a local 'h = n / 2' as it is) and before every pass that
    # asks the dependence test: 'n / 2' named at the entry is a parameter, so 'a[i + n / 2]' is affine.
    module = step("hoist", module, hoist.run)
    # NOTE: induction after constprop (a counter's step may be a propagated constant) and before
    # delinearize: 'a[k]; k++' becomes a[k_base + n * i + j], which delinearize can then split.
    module = step("induction", module, induction.run)
    # NOTE: sink-guard after induction (a counter stepped under a sunk guard would be a conditional
    # increment, which induction leaves alone) and before every dependence-driven pass: a loop under a
    # host-level 'if' (goto over a loop, a switch between loops) must be a loop of its own to be mapped.
    module = step("sink-guard", module, sink_guard.run)
    module = step("delinearize", module, delinearize.run)
    # NOTE: ifreduce before privatize and every dependence-driven pass: a conditional accumulation, a
    # max by comparison or a sum through a temporary must already read as 'x = x op e' when they ask
    # which loops carry only reductions.
    # NOTE: argreduce before ifreduce and with it before the dependence-driven passes: an argmax loop
    # ('if (a[i] > m) { m = a[i]; k = i; }') must already be its two reductions when they ask.
    module = step("argreduce", module, argreduce.run)
    module = step("ifreduce", module, lambda k: ifreduce.run(k, reassociate=reassociate, funcs=module.funcs))
    # NOTE: wraparound before privatize: a scalar carried to the next iteration is not privatisable;
    # once the first iteration is peeled and the others read the previous iteration's value, the loop
    # writes it no more.
    module = step("wraparound", module, wraparound.run)
    # NOTE: peel right after wraparound (both peel a first iteration; this one where it is a write the
    # other iterations read, 'a[i] = a[0] + b[i]') and before every pass that restructures around the
    # loops the dependence test finds parallel.
    module = step("peel", module, peel.run)
    # NOTE: privatize first: a scalar declared once at the top and reassigned in
    # a nest (symm's temp2) carries dependences on every loop around its uses,
    # which would keep distribution and map-gpu from seeing those loops' parallelism.
    module = step("privatize", module, privatize.run)
    # NOTE: snapshot after privatize (its parallelism test must see privatised scalars) and before
    # distribute: a read turned into a read of the entry copy drops anti dependences, which can free
    # an outer loop that distribution and interchange would otherwise build around (trmm's i).
    module = step("snapshot", module, snapshot.run)
    # NOTE: expand after snapshot and before distribute: distribution needs the expanded array to
    # split doitgen's (r, q) body into parallel nests (with one vector, r and q carry its reuse).
    module = step("expand", module, expand.run)
    # NOTE: forward after expand and right before reschedule: an accumulator scalar loaded from and
    # stored back to one element (ludcmp's w) is scalar state that reschedule refuses; accumulated in
    # the element itself, the nest is lu's, which reschedule turns right-looking.  Kept only in a
    # kernel that reschedule then changes: elsewhere the scalar stays in a register.
    # NOTE: closure right after expand and before reschedule: floyd-warshall's k step is parallel by a
    # value argument (row and column k hold still), which isl's scheduler would hide by skewing the
    # nest into a wavefront.  The kernel it takes comes out mapped, and every pass after it returns a
    # kernel holding a Launch unchanged (each module's precondition).
    module = step("closure", module, closure.run)
    module = step("forward", module, lambda k: _forward_if_rescheduled(k, forward.run, reschedule.run))
    # NOTE: reschedule after expand (privatised scalars and expanded scratch arrays are what let a
    # nest qualify: it refuses scalar state) and before distribute: it may turn one nest into a
    # sequential loop around parallel pieces (lu's right-looking k), which distribution must then
    # split so that map-gpu makes k a host loop launching them.
    module = step("reschedule", module, reschedule.run)
    module = step("distribute", module, distribute.run)
    # NOTE: interchange before map-gpu: it moves parallel loops outward so
    # that map-gpu's outermost-perfect-nest marking finds them.
    module = step("interchange", module, interchange.run)
    # NOTE: fuse after interchange: a piece's parallel depth (what fusion must
    # not lower) is only known once interchange has moved its parallel loops
    # outward; fusing earlier could glue an imperfect nest interchange needs.
    if fuse:
        module = step("fuse", module, lambda k: fusion.run(k, reassociate=reassociate))
    # NOTE: wavefront after interchange and before map-gpu: it only skews nests
    # in which no loop is parallel, so it must see interchange's result (a nest
    # interchange made parallel is left alone), and map-gpu must then see the
    # skewed nest to keep the wavefront loop on the host and launch the new
    # inner loop in parallel.
    module = step("wavefront", module, wavefront.run)
    # NOTE: scan after wavefront (a loop left sequential by every restructuring pass, whose only carried
    # value is a running one) and before normalize and reduce-gpu: its chunk loops are parallel maps,
    # its phase-1 loops reductions over each chunk, which they must see.
    # NOTE: search beside scan, for the same reason (a loop left at the first iteration where a condition
    # holds: its flag keeps every other pass from it), and before it (its prefix maps are no scans).
    module = step("search", module, search.run)
    module = step("scan", module, lambda k: scan.run(k, reassociate=reassociate))
    # NOTE: normalize after the restructuring passes and before reduce-gpu and map-gpu: it only rewrites
    # loops the analysis proves parallel, on the final loop structure, into the unit-step form map-gpu maps.
    module = step("normalize", module, normalize.run)
    # NOTE: reduce-gpu right before map-gpu: map-gpu launches each marked
    # reduction as its own (one-block) launch, and only then can the loop
    # around it become a host loop; it must see the final loop structure.
    module = step("reduce-gpu", module, lambda k: reduce_gpu.run(k, reassociate=reassociate))
    # NOTE: map-gpu must run last: it wraps top-level statements in Launch
    # regions, after which only launch-aware passes may run.
    module = step("map-gpu", module, lambda k: map_gpu.run(k, reassociate=reassociate), required=True)
    # NOTE: launch-forms after map-gpu, last: a form describes a launch, and no pass changes a launch
    # after it (the back end reads the forms; emission under other options decides them again).
    module = step("launch-forms", module, lambda k: launch_forms.run(k, options=tiling), required=True)
    return module


def _forward_if_rescheduled(kernel: ir.Kernel, forward: Callable[[ir.Kernel], ir.Kernel],
                            reschedule: Callable[[ir.Kernel], ir.Kernel]) -> ir.Kernel:
    """``forward(kernel)`` when reschedule changes the result, else ``kernel``: forwarding moves an
    accumulator from a register into memory, which pays only as the price of a new schedule."""
    forwarded = forward(kernel)
    if forwarded is kernel or reschedule(forwarded) is forwarded:
        return kernel
    return forwarded


class _Stepper:
    """Applies a kernel pass to every kernel (under the budget, if any), then checks and dumps."""

    def __init__(self, *, verify_each: bool, dump_ir: Path | None, budget: Budget | None = None) -> None:
        self.verify_each = verify_each
        self.dump_ir = dump_ir
        self.count = 0
        self.budget = budget
        self.checked: ir.Module | None = None  # the last module that passed ircheck (IR is immutable)
        self.deadline = time.monotonic() + budget.total_seconds if budget is not None else 0.0

    def __call__(self, name: str, module: ir.Module, run: Callable[[ir.Kernel], ir.Kernel], *,
                 required: bool = False) -> ir.Module:
        kernels = tuple(self._run(name, k, run, required) for k in module.kernels)
        if any(a is not b for a, b in zip(kernels, module.kernels)):
            module = ir.Module(module.funcs, kernels, loc=module.loc)
        if self.verify_each and module is not self.checked:  # a pass that changed nothing: checked already
            ircheck.check(module)
            self.checked = module
        self.dump(name, module)
        return module

    def _run(self, name: str, k: ir.Kernel, run: Callable[[ir.Kernel], ir.Kernel], required: bool) -> ir.Kernel:
        """``run(k)``; under the budget unless ``required`` (map-gpu: the emitter needs its regions)."""
        progress.stage(f"pass {name}", k.name)
        if self.budget is None or required:
            return run(k)
        from passes import budget
        from transpile.diagnostics import warn

        left = self.deadline - time.monotonic()
        total = left < self.budget.pass_seconds
        seconds = min(self.budget.pass_seconds, left)
        what = f"the total time budget ({self.budget.total_seconds:g} s)" if total else \
            f"its time budget ({self.budget.pass_seconds:g} s)"
        if seconds <= 0:
            warn("pass-budget", k.loc, f"pass '{name}' not run: {what} is spent; the output is correct but less "
                                       "optimised")
            return k
        with budget.scope(name, seconds, self.budget.memory_mb) as sc:
            try:
                out = run(k)
            except budget.BudgetExceeded:
                out = k  # the pass's input: valid, the same program
        if sc.stopped is not None:
            if sc.stopped == "memory":
                what = f"the memory budget ({self.budget.memory_mb:g} MB)"
            warn("pass-budget", k.loc, f"pass '{name}' stopped at {what}; the output is correct but less optimised")
        return out

    def dump(self, name: str, module: ir.Module) -> None:
        if self.dump_ir is None:
            return
        from transpile.ir import text

        self.dump_ir.mkdir(parents=True, exist_ok=True)
        (self.dump_ir / f"{self.count:02d}-{name}.ir").write_text(text.show(module))
        self.count += 1

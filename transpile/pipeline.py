"""The default lowering pipeline, one pass a line.

``lower(module)`` takes front-end IR (from C or from the text form) to the
mapped IR that :mod:`transpile.cuda` emits.  With ``verify_each`` the IR
invariants are checked after every pass; with ``dump_ir`` the IR after every
pass is written as ``DIR/NN-<pass>.ir``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from transpile import ir, ircheck


def lower(module: ir.Module, *, verify_each: bool = True, dump_ir: Path | None = None) -> ir.Module:
    """Run the default pipeline over every kernel of ``module``."""
    from passes import distribute, interchange, map_gpu, wavefront

    step = _Stepper(verify_each=verify_each, dump_ir=dump_ir)
    ircheck.check(module)  # front ends must hand over valid IR
    step.dump("input", module)
    # NOTE: distribute before interchange: splitting a loop body exposes the
    # perfect nests that interchange (and map-gpu's par marking) need.
    module = step("distribute", module, distribute.run)
    # NOTE: interchange before map-gpu: it moves parallel loops outward so
    # that map-gpu's outermost-perfect-nest marking finds them.
    module = step("interchange", module, interchange.run)
    # NOTE: wavefront after interchange and before map-gpu: it only skews nests
    # in which no loop is parallel, so it must see interchange's result (a nest
    # interchange made parallel is left alone), and map-gpu must then see the
    # skewed nest to keep the wavefront loop on the host and launch the new
    # inner loop in parallel.
    module = step("wavefront", module, wavefront.run)
    # NOTE: map-gpu must run last: it wraps top-level statements in Launch
    # regions, after which only launch-aware passes may run.
    module = step("map-gpu", module, map_gpu.run)
    return module


class _Stepper:
    """Applies a kernel pass to every kernel, then checks and dumps."""

    def __init__(self, *, verify_each: bool, dump_ir: Path | None) -> None:
        self.verify_each = verify_each
        self.dump_ir = dump_ir
        self.count = 0

    def __call__(self, name: str, module: ir.Module, run: Callable[[ir.Kernel], ir.Kernel]) -> ir.Module:
        kernels = tuple(run(k) for k in module.kernels)
        if any(a is not b for a, b in zip(kernels, module.kernels)):
            module = ir.Module(module.funcs, kernels, loc=module.loc)
        if self.verify_each:
            ircheck.check(module)
        self.dump(name, module)
        return module

    def dump(self, name: str, module: ir.Module) -> None:
        if self.dump_ir is None:
            return
        from transpile import text

        self.dump_ir.mkdir(parents=True, exist_ok=True)
        (self.dump_ir / f"{self.count:02d}-{name}.ir").write_text(text.show(module))
        self.count += 1

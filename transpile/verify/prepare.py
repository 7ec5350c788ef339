"""Test data for one shape: inputs on which the reference is finite, well conditioned and informative.

:func:`prepare` draws the first input set from distribution ``dist1`` under
each recipe of :data:`synth.RECIPES` in turn, until the reference's outputs
are finite and a 1e-13 relative perturbation of the float inputs moves them by
at most 1e4 times as much (the *amplification*; above that, differences in
rounding between two correct implementations, FMA contraction on a GPU for
one, would exceed the tolerance).  If no recipe reaches that, the finite one
with the smallest amplification is used and the tolerance is widened by
amplification / 1e4 (refused above 1e8: the shape is skipped).

The second input set comes from ``dist2`` under the same recipe.  If the
reference gives (nearly) the same outputs on both (a *degenerate* task, where
a hard-coded answer would pass), other distributions are tried for the second
set and the widening is recorded; if the outputs never move, the shape is
marked degenerate.  A *ghost* shape is one where the reference leaves every
output as it found it (a kernel that does nothing passes there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from transpile import ir
from transpile.verify.checks import max_rel_error, same_bits, tolerance
from transpile.verify.proc import ChildError
from transpile.verify.reference import Reference
from transpile.verify.signature import KernelSig, reduction_depth
from transpile.verify.synth import DISTRIBUTIONS, RECIPES, Inputs, Shape, make_inputs, seed_for

ACCEPT_AMPLIFICATION = 1e4
MAX_AMPLIFICATION = 1e8
_PERTURB = {"f64": 1e-13, "f32": 1e-6}


class Skip(Exception):
    """This shape cannot be tested (the reason says why); other shapes may still be."""


@dataclass
class Prepared:
    """Everything a stage needs to run and judge one shape."""

    shape: Shape
    recipe: str
    dist1: str
    dist2: str
    x1: Inputs
    x2: Inputs
    ref1: dict[str, np.ndarray]
    ref2: dict[str, np.ndarray]
    depth: float
    amplification: float
    widen: float
    ghost: bool
    degenerate: bool
    notes: list[str] = field(default_factory=list)

    def tol(self, dtype: np.dtype) -> float:
        """The tolerance for an output of ``dtype`` at this shape."""
        return tolerance(dtype, self.depth, self.widen)


def finite(sig: KernelSig, x: Inputs, r: dict[str, np.ndarray]) -> bool:
    """Whether every output element the reference wrote is finite."""
    for a in sig.outputs:
        out = r[a.name]
        if out.dtype.kind == "f" and not (np.isfinite(out) | same_bits(out, x[a.name])).all():
            return False
    return True


def _perturbed(sig: KernelSig, x: Inputs, rng: np.random.Generator) -> tuple[Inputs, float] | None:
    y = dict(x)
    delta = 0.0
    for a in sig.arrays:
        if a.intent != "out" and a.dtype.kind == "f" and x[a.name].size:
            d = _PERTURB[a.ty.name]
            delta = max(delta, d)
            y[a.name] = (x[a.name] * (1 + d * rng.uniform(-1, 1, x[a.name].shape))).astype(a.dtype)
    return (y, delta) if delta else None


def _distance(sig: KernelSig, r: dict[str, np.ndarray], s: dict[str, np.ndarray]) -> float:
    return max([max_rel_error(s[a.name], r[a.name]) for a in sig.outputs] + [0.0])


def amplification(ref: Reference, sig: KernelSig, x: Inputs, r: dict[str, np.ndarray],
                  rng: np.random.Generator) -> float:
    """How much a tiny relative perturbation of the float inputs grows in the outputs."""
    p = _perturbed(sig, x, rng)
    if p is None:
        return 1.0
    y, delta = p
    try:
        rp = ref.run(y)
    except ChildError:
        return float("inf")
    if not finite(sig, y, rp):
        return float("inf")
    return _distance(sig, r, rp) / delta


def _run(ref: Reference, x: Inputs) -> dict[str, np.ndarray] | str:
    try:
        return ref.run(x)
    except ChildError as e:
        return f"the reference {'crashed' if e.kind == 'crash' else 'failed'} ({e.message})"


def _second(ref: Reference, sig: KernelSig, shape: Shape, seed: int, index: int, ri: int, recipe: str,
            dist1: str, dist2: str, r1: dict[str, np.ndarray], tol_of: Any) -> tuple[str, Inputs, dict[str, np.ndarray],
                                                                                bool, bool] | None:
    """The second input set: (distribution, inputs, outputs, degenerate, widened), or None if none is finite."""
    tries = [dist2, dist1] + [d for d in ("large", "integers", "tiny", "uniform", "signed") if d not in (dist1, dist2)]
    chosen = None
    for k, d in enumerate(tries):
        x2 = make_inputs(sig, shape, seed_for(seed, index, 2, ri, k), d, recipe)
        if x2 is None:
            continue
        r2 = _run(ref, x2)
        if isinstance(r2, str) or not finite(sig, x2, r2):
            continue
        if any(max_rel_error(r2[a.name], r1[a.name]) > tol_of(a) for a in sig.outputs):
            return d, x2, r2, False, k > 1
        if chosen is None:
            chosen = (d, x2, r2, True, False)
    return chosen


def prepare(ref: Reference, sig: KernelSig, kernel: ir.Kernel, shape: Shape, *, seed: int, index: int,
            dist1: str = "signed", dist2: str = "uniform") -> Prepared:
    """Inputs and reference outputs for ``shape``; raises :class:`Skip` when none can be found."""
    depth = reduction_depth(sig, kernel, shape.scalars)
    found: list[tuple[float, int, str, Inputs, dict[str, np.ndarray]]] = []
    failure = ""
    for ri, recipe in enumerate(RECIPES):
        x1 = make_inputs(sig, shape, seed_for(seed, index, 1, ri), dist1, recipe)
        if x1 is None:
            continue
        r1 = _run(ref, x1)
        if isinstance(r1, str):
            failure = r1
            continue
        if not finite(sig, x1, r1):
            failure = "the reference's output is not finite"
            continue
        amp = amplification(ref, sig, x1, r1, seed_for(seed, index, 3, ri))
        if amp > MAX_AMPLIFICATION:
            failure = f"the reference is ill-conditioned (amplification {amp:.1e})"
            continue
        found.append((amp, ri, recipe, x1, r1))
        if amp <= ACCEPT_AMPLIFICATION:
            second = _try_second(ref, sig, shape, seed, index, depth, dist1, dist2, found[-1])
            if second is not None:
                return second
            failure = "no second input set gives a finite reference output"
    for cand in sorted((c for c in found if c[0] > ACCEPT_AMPLIFICATION), key=lambda c: c[0]):
        second = _try_second(ref, sig, shape, seed, index, depth, dist1, dist2, cand)
        if second is not None:
            return second
    raise Skip(f"{failure or 'no input recipe applies'} under every input recipe")


def _try_second(ref: Reference, sig: KernelSig, shape: Shape, seed: int, index: int, depth: float, dist1: str,
                dist2: str, first: tuple[float, int, str, Inputs, dict[str, np.ndarray]]) -> Prepared | None:
    amp, ri, recipe, x1, r1 = first
    widen = max(1.0, amp / ACCEPT_AMPLIFICATION)
    second = _second(ref, sig, shape, seed, index, ri, recipe, dist1, dist2, r1,
                     lambda a: tolerance(a.dtype, depth, widen))
    if second is None:
        return None
    d2, x2, r2, degenerate, widened = second
    notes = []
    if recipe != "random":
        notes.append(f"{shape.label}: random inputs gave a non-finite or ill-conditioned reference; "
                     f"used the '{recipe}' recipe")
    if widen > 1:
        notes.append(f"{shape.label}: tolerance widened {widen:.1e}x (amplification {amp:.1e})")
    if widened:
        notes.append(f"{shape.label}: the output barely depended on the inputs; widened the second "
                     f"input set to the '{d2}' distribution")
    if degenerate and sig.outputs:
        notes.append(f"{shape.label}: degenerate task: the reference's outputs do not depend on the inputs "
                     "(a hard-coded answer would pass this shape)")
    ghost = bool(sig.outputs) and all(same_bits(r1[a.name], x1[a.name]).all() for a in sig.outputs)
    if ghost:
        notes.append(f"{shape.label}: ghost shape: the reference leaves every output unchanged "
                     "(a kernel that does nothing passes this shape)")
    return Prepared(shape, recipe, dist1, d2, x1, x2, r1, r2, depth, amp, widen, ghost, degenerate, notes)


__all__ = ["DISTRIBUTIONS", "Prepared", "Skip", "amplification", "finite", "prepare"]

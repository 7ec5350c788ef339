"""Test data for one shape: inputs on which the reference is finite, well conditioned and informative.

:func:`prepare` draws the first input set from distribution ``dist1`` under
each recipe of :data:`synth.RECIPES` in turn, until the reference's outputs
are finite and a 1e-13 relative perturbation of the float inputs moves them by
at most 1e4 times as much (the *amplification*; above that, differences in
rounding between two correct implementations, FMA contraction on a GPU for
one, would exceed the tolerance).  If no recipe reaches that, the finite one
with the smallest amplification is used and the tolerance is widened by
amplification / 1e4 (refused above 1e8: the shape is skipped).

Rounding order: a correct kernel may round differently from the reference
(a GPU contracts ``a*b+c`` to FMA; a reduction may be reassociated).  Where the
reference has an FMA-contracted build (:meth:`Reference.run_contracted`), its
distance from the plain build on the first input set is the *rounding spread*,
and the tolerance is at least :data:`SPREAD_FACTOR` times it; a spread that
would push the f64 tolerance past :data:`MAX_TOL` makes the shape
ill-conditioned (skipped), since no comparison could then tell a rounding
difference from a wrong result.

A reduction's reassociation moves outputs in a way an input perturbation underestimates where the
output cancels (layer norm's ``(x - mean) * r * gamma + beta`` near zero: one element in 561 at
2.2x the tolerance, one quick check in ten refused on a correct kernel).  For shapes small enough
to interpret (:data:`REASSOC_WORK`), the IR interpreter runs the source kernel with every proven
reduction marked ``reduce`` in its shuffled mode (random order, random association) and its
distance from the reference counts as a rounding spread too (:func:`reassociation_spread`).

The second input set comes from ``dist2`` under the same recipe.  Its
conditioning is measured on its own (amplification and rounding spread, as
for the first), and its outputs are judged against a tolerance widened for
them (``Prepared.widen2``): another distribution under the same recipe can be
far worse conditioned (ludcmp at n = 257 under ``random``: amplification 4.6e3
on ``signed`` inputs, 1.4e6 on ``uniform`` ones, whose FMA spread, 7.6e-8, is
33 times the first set's tolerance; the H200 missed that tolerance by 7.7x,
run 51).  A second set too ill-conditioned to test, or one the reference
gives (nearly) the same outputs on as on the first (a *degenerate* task, where
a hard-coded answer would pass), makes other distributions be tried for the
second set and the widening is recorded; if the outputs never move, the shape
is marked degenerate.  A *ghost* shape is one where the reference leaves every
output as it found it (a kernel that does nothing passes there).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from transpile import ir
from transpile.verify.bound import BOUND_WORK
from transpile.verify.checks import float_kind, max_rel_error, same_bits, tolerance
from transpile.verify.proc import ChildError
from transpile.verify.reference import Reference
from transpile.verify.signature import KernelSig, reduction_depth
from transpile.verify.synth import (
    DISTRIBUTIONS,
    DRAWN_WORK,
    RECIPES,
    SCALAR_KINDS,
    Inputs,
    Shape,
    draw,
    estimate_work,
    fill,
    make_inputs,
    perturb_one,
    seed_for,
    special_values,
    undefined_at,
)

ACCEPT_AMPLIFICATION = 1e4
MAX_AMPLIFICATION = 1e8
SPREAD_FACTOR = 16.0
AMP_FACTOR = 4.0
"""The rounding error an output may carry, in units of ``amplification * eps * sqrt(depth)``: a
reordered sum of ``depth`` terms moves each term by about eps, and the kernel amplifies that as it
does an input perturbation.  Measured on a float correlation (amplification 0.7e3-2e3, depth 13):
the GPU build's errors were 0.6-1.4 of that unit."""
EPS = {"f64": 2.0**-53, "f32": 2.0**-24}
MAX_TOL = {"f64": 1e-6, "f32": 1e-3}
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
    spread: float = 0.0
    widen2: float = 1.0
    """The widening for the second input set's outputs (its own conditioning, at least ``widen``)."""
    extra: dict[str, tuple[Inputs, dict[str, np.ndarray]]] = field(default_factory=dict)
    """Input sets of the state and special-value runs (:func:`extras`) with their reference outputs."""
    extra_widen: dict[str, float] = field(default_factory=dict)
    """The widening an extra set's own conditioning calls for (the Q sets: other scalars)."""
    bound: dict[str, np.ndarray] | None = None
    """Per-element error bounds for the first set's outputs (:mod:`transpile.verify.bound`), or None."""

    def tol(self, dtype: np.dtype, *, second: bool = False, extra: str = "") -> float:
        """The tolerance for an output of ``dtype`` at this shape, on the first input set, the second,
        or the extra set ``extra`` (its own widening, at least the first set's)."""
        if extra:
            return tolerance(dtype, self.depth, max(self.widen, self.extra_widen.get(extra, 1.0)))
        return tolerance(dtype, self.depth, max(self.widen, self.widen2) if second else self.widen)


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
                  rng: np.random.Generator, *, timeout: float = 120.0) -> float:
    """How much a tiny relative perturbation of the float inputs grows in the outputs."""
    p = _perturbed(sig, x, rng)
    if p is None:
        return 1.0
    y, delta = p
    try:
        rp = ref.run(y, timeout=timeout)
    except ChildError:
        return float("inf")
    if not finite(sig, y, rp):
        return float("inf")
    return _distance(sig, r, rp) / delta


def rounding_spread(ref: Reference, sig: KernelSig, x: Inputs, r: dict[str, np.ndarray], *,
                    timeout: float = 120.0) -> float:
    """The max relative distance between the FMA-contracted reference and ``r`` on ``x`` (0 if none)."""
    if not any(a.dtype.kind == "f" for a in sig.outputs):
        return 0.0
    try:
        rc = ref.run_contracted(x, timeout=timeout)
    except ChildError:
        return 0.0
    if rc is None or not finite(sig, x, rc):
        return 0.0
    return max([max_rel_error(rc[a.name], r[a.name]) for a in sig.outputs if a.dtype.kind == "f"] + [0.0])


def amplification_widen(sig: KernelSig, depth: float, amp: float) -> float:
    """The widening of the tolerance that the amplification calls for (1: none): the tolerance must
    hold :data:`AMP_FACTOR` times ``amp * eps * sqrt(depth)`` of the output's type.

    ``TOL_BASE`` is about 9e5 double epsilons but only 170 float ones, so this widens float outputs
    from an amplification of about 100 on, and double ones never before ``amp / ACCEPT_AMPLIFICATION``
    (in :func:`prepare`) already does.  Raises :class:`Skip` past :data:`MAX_TOL`."""
    return _widen(sig, depth, lambda kind: AMP_FACTOR * amp * EPS[kind] * math.sqrt(max(depth, 1.0)),
                  lambda a, need: f"ill-conditioned for {a.dtype.name}: an amplification of {amp:.1e} puts "
                                  f"rounding errors of about {need:.1e} relative in '{a.name}'")


def spread_widen(sig: KernelSig, depth: float, spread: float) -> float:
    """The widening of the tolerance that a rounding spread calls for (1: none).

    Raises :class:`Skip` when the widened tolerance would exceed :data:`MAX_TOL`."""
    return _widen(sig, depth, lambda kind: SPREAD_FACTOR * spread,
                  lambda a, need: f"ill-conditioned: rounding order alone (FMA contraction) moves "
                                  f"'{a.name}' by {spread:.1e} relative")


def _widen(sig: KernelSig, depth: float, need: Callable[[str], float], why: Callable[[Any, float], str]) -> float:
    """The largest ``need(kind) / tolerance`` over the float outputs (at least 1), where ``need`` is
    the relative error an output of that float kind must be allowed; :class:`Skip` with ``why`` when
    the tolerance that makes would exceed :data:`MAX_TOL`."""
    widen = 1.0
    for a in sig.outputs:
        if a.dtype.kind != "f":
            continue
        kind = float_kind(a.dtype)
        base = tolerance(a.dtype, depth)
        n = need(kind)
        if max(n, base) > MAX_TOL[kind]:
            raise Skip(why(a, n))
        widen = max(widen, n / base)
    return widen


REASSOC_WORK = max(DRAWN_WORK.values())
"""Shapes up to this much work (``synth.estimate_work``) also measure the reassociation spread
(:func:`reassociation_spread`: the IR interpreter, about 0.25 s for layer norm at n = m = 257, 2e5
work): every shape either mode draws (``synth.DRAWN_WORK``).  6e4 left full mode's n = 257 shape out,
and the full-mode verify of examples/layernorm.c refused seeds 8 and 34 of 40; 2.5e5 then left out
full mode's long side (n = 63, m = 1787: 3.4e5 work), where seed 34 refused a correct layer norm by
2.7x the tolerance (stop 37).  Bounded by the largest drawn shape, the measure costs at most a few
interpreted seconds per shape, in full mode only (quick mode draws up to 4e5)."""


def reassociated(kernel: ir.Kernel) -> ir.Module | None:
    """``kernel`` with every loop whose body is reductions the exact analysis proves marked ``reduce``
    (whether or not the compiler parallelises it: any correct GPU kernel may reassociate a reduction),
    or None if it has none over a float accumulator (or the analysis fails)."""
    import dataclasses

    from passes import reductions
    from transpile.ir import accum

    try:
        found = reductions.analyze(kernel)
    except Exception:  # noqa: BLE001 (isl or the analysis failing only means no spread)
        return None
    if not found:
        return None
    proven = reductions.Proven(kernel, found)
    marked = False

    def block(body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        nonlocal marked
        out: list[ir.Stmt] = []
        for st in body:
            if isinstance(st, ir.For):
                ops = proven.body_ops(st)
                if ops is not None and not st.reduce and st.par is None:
                    marked = marked or any(accum.accumulation(c).target.ty.is_float for c in st.body)  # type: ignore[union-attr]
                    out.append(dataclasses.replace(st, reduce=ops))
                else:
                    out.append(dataclasses.replace(st, body=block(st.body)))
            elif isinstance(st, ir.If):
                out.append(dataclasses.replace(st, then=block(st.then), orelse=block(st.orelse)))
            else:
                out.append(st)
        return tuple(out)

    k = dataclasses.replace(kernel, body=block(kernel.body))
    return ir.Module((), (k,)) if marked else None


def reassociation_spread(module: ir.Module | None, sig: KernelSig, x: Inputs, r: dict[str, np.ndarray],
                         seed: int) -> float:
    """The max relative distance between ``r`` and the IR interpreter's run of :func:`reassociated`'s
    ``module`` on ``x`` with its reductions in a random order and association (0 if there is none):
    how far a legal reassociation moves these outputs."""
    if module is None or not any(a.dtype.kind == "f" for a in sig.outputs):
        return 0.0
    from transpile.ir import interp

    try:
        out = interp.run(module, sig.name, x, shuffle=seed)
    except Exception:  # noqa: BLE001 (the interpreter refusing these inputs: no spread)
        return 0.0
    if not finite(sig, x, out):
        return 0.0
    return max([max_rel_error(out[a.name], r[a.name]) for a in sig.outputs if a.dtype.kind == "f"] + [0.0])


def conditioning(ref: Reference, sig: KernelSig, depth: float, x: Inputs, r: dict[str, np.ndarray],
                 rng: np.random.Generator, reassoc: ir.Module | None = None) -> tuple[float, float, float]:
    """``(widen, amplification, spread)`` of input set ``x`` (reference outputs ``r``): the widening of
    the tolerance its outputs need.  Raises :class:`Skip` when it is too ill-conditioned to test.
    ``reassoc``: :func:`reassociated`'s module where the shape is small enough to interpret; its
    :func:`reassociation_spread` counts as a rounding spread too."""
    amp = amplification(ref, sig, x, r, rng)
    if amp > MAX_AMPLIFICATION:
        raise Skip(f"the reference is ill-conditioned (amplification {amp:.1e})")
    spread = max(rounding_spread(ref, sig, x, r),
                 reassociation_spread(reassoc, sig, x, r, int(rng.integers(1, 2**31))))
    widen = max(1.0, amp / ACCEPT_AMPLIFICATION, spread_widen(sig, depth, spread), amplification_widen(sig, depth, amp))
    return widen, amp, spread


def _run(ref: Reference, x: Inputs) -> dict[str, np.ndarray] | str:
    try:
        return ref.run(x)
    except ChildError as e:
        return f"the reference {'crashed' if e.kind == 'crash' else 'failed'} ({e.message})"


def _second(ref: Reference, sig: KernelSig, shape: Shape, seed: int, index: int, ri: int, recipe: str,
            dist1: str, dist2: str, r1: dict[str, np.ndarray], depth: float, widen: float,
            reassoc: ir.Module | None = None, scalars: str = "window") -> tuple[str, Inputs, dict[str, np.ndarray], bool, bool, float] | None:
    """The second input set: (distribution, inputs, outputs, degenerate, widened, its widening), or None
    if none is finite and testable.  Its outputs must differ from ``r1`` by more than the tolerance of
    either set (else a result kept from the first call would pass)."""
    tries = [dist2, dist1] + [d for d in ("large", "integers", "tiny", "uniform", "signed") if d not in (dist1, dist2)]
    scalars2 = scalars
    chosen = None
    for k, d in enumerate(tries):
        x2 = make_inputs(sig, shape, seed_for(seed, index, 2, ri, k), d, recipe, scalars=scalars2)
        if x2 is None:
            continue
        r2 = _run(ref, x2)
        if isinstance(r2, str) or not finite(sig, x2, r2):
            continue
        try:
            widen2 = max(widen, conditioning(ref, sig, depth, x2, r2, seed_for(seed, index, 4, ri, k), reassoc)[0])
        except Skip:
            continue
        if any(max_rel_error(r2[a.name], r1[a.name]) > tolerance(a.dtype, depth, widen2) for a in sig.outputs):
            return d, x2, r2, False, k > 1, widen2
        if chosen is None:
            chosen = (d, x2, r2, True, False, widen2)
    return chosen


def prepare(ref: Reference, sig: KernelSig, kernel: ir.Kernel, shape: Shape, *, seed: int, index: int,
            dist1: str = "signed", dist2: str = "uniform", extra: bool = True) -> Prepared:
    """Inputs and reference outputs for ``shape``; raises :class:`Skip` when none can be found, or
    when the program accesses an array out of bounds at these sizes (no defined result to match).

    The first set's float scalars are in U(0.25, 1.25) (its runs report the classic classes); the
    second set's are of kind ``(seed + 3 * index) % 6`` of :data:`synth.SCALAR_KINDS` (0, 1, -1,
    negative, large, the window), the Q runs' of the next two kinds.  Where the second set's
    reference is then not finite or too ill-conditioned under every distribution, the shape is
    prepared again with scalars in the window (noted).  With ``extra`` the extra input sets
    (:func:`extras`) are added to the result."""
    why = undefined_at(kernel, shape.scalars)
    if why is not None:
        raise Skip(why)
    floats = any(a.role == "float" for a in sig.args)
    kind = (seed + 3 * index) % len(SCALAR_KINDS)
    try:
        prep = _prepare(ref, sig, kernel, shape, seed=seed, index=index, dist1=dist1, dist2=dist2,
                        scalars=f"kind:{kind}" if floats else "window")
    except Skip as e:
        if not floats:
            raise
        prep = _prepare(ref, sig, kernel, shape, seed=seed, index=index, dist1=dist1, dist2=dist2,
                        scalars="window")
        kind = -1
        prep.notes.append(f"{shape.label}: scalars 0, 1, -1, negative or large gave no testable reference "
                          f"({e}); scalars drawn in U(0.25, 1.25)")
    if extra:
        extras(ref, sig, kernel, prep, seed=seed, index=index, kind=kind)
    if any(a.dtype.kind == "f" for a in sig.outputs) and estimate_work(kernel, shape.scalars) <= BOUND_WORK:
        from transpile.verify.bound import bounds

        prep.bound = bounds(kernel, sig, prep.x1)
    return prep


def _reference_if_defined(ref: Reference, x: Inputs) -> dict[str, np.ndarray] | None:
    r = _run(ref, x)
    return None if isinstance(r, str) else r


def extras(ref: Reference, sig: KernelSig, kernel: ir.Kernel, prep: Prepared, *, seed: int, index: int,
           kind: int = -1) -> None:
    """The input sets for the state and special-value runs, with their reference outputs:

    * ``xp`` (run P): the first set with one element of each float input redrawn
      (:func:`synth.perturb_one`); its ``out`` arrays filled with zeros or random finite values
      (alternating by seed and shape): a result kept from an earlier call on the same pointers,
      sizes, scalars or sampled elements is stale there, and so is one keyed on the fill; judged
      with its own widening (the redrawn element may make a cancellation the first set had not);
    * ``xq2``, ``xq3`` (runs Q2, Q3): the first set's arrays with scalars of the kinds after the
      second set's (``kind`` + 1 and + 2, :func:`synth.float_scalar`; only for kernels with float
      scalars): a result memoised on the arrays alone is stale there, and with the second set two
      shapes draw every kind of scalar (0, 1, -1, negative, large, the window);
    * ``xr`` (run R): the first set with Inf, -Inf, NaN, -0.0 and subnormals in a few elements of
      the float inputs (:func:`synth.special_values`), kept only where the reference runs and its
      plain and FMA-contracted builds agree on where the outputs are NaN or infinite (otherwise
      the result depends on rounding order and nothing can be asserted)."""
    rng = seed_for(seed, index, 11)
    xp = perturb_one(sig, prep.x1, rng, prep.dist1)
    for a in sig.outputs:  # zeros or random finite values, alternating by seed and shape
        if a.intent == "out":
            xp[a.name] = fill(a.dtype, xp[a.name].shape, ("zero", "random")[(seed + index) % 2], rng)
    r = _reference_if_defined(ref, xp)
    if r is not None and finite(sig, xp, r):
        try:  # the redrawn element changes the conditioning (a cancellation it makes or undoes): its own widening
            widen = max(conditioning(ref, sig, prep.depth, xp, r, seed_for(seed, index, 13))[0], prep.widen2)
        except Skip:
            widen = 0.0
        if widen:
            prep.extra["p"] = (xp, r)
            prep.extra_widen["p"] = widen
    if any(a.role == "float" for a in sig.args):
        sources: list[tuple[str, Inputs]] = []
        if kind >= 0:
            sources += [(f"q{k + 1}", draw(sig, prep.shape, rng, prep.dist1, scalars=f"kind:{kind + k}"))
                        for k in (1, 2)]
        for k, (name, src) in enumerate(sources):
            xq = {**prep.x1, **{a.name: src[a.name] for a in sig.args if a.role == "float"}}
            rq = _reference_if_defined(ref, xq)
            if rq is None or not finite(sig, xq, rq):
                continue
            try:  # other scalars, other conditioning: amplification and FMA spread, as for the first two sets
                widen = conditioning(ref, sig, prep.depth, xq, rq, seed_for(seed, index, 12, k))[0]
                widen = max(widen, prep.widen2)  # the reassociation spread measured for the first two
            except Skip:
                continue
            prep.extra[name] = (xq, rq)
            prep.extra_widen[name] = widen
    xr = special_values(sig, prep.x1, rng)
    if xr is not None:
        rr = _reference_if_defined(ref, xr)
        if rr is not None:
            try:
                rc = ref.run_contracted(xr)
            except ChildError:
                rc = None
            same = rc is None or all(
                np.array_equal(np.isnan(rr[a.name]), np.isnan(rc[a.name]))
                and np.array_equal(np.isinf(rr[a.name]), np.isinf(rc[a.name]))
                for a in sig.outputs if a.dtype.kind == "f")
            if same:
                prep.extra["r"] = (xr, rr)


def _prepare(ref: Reference, sig: KernelSig, kernel: ir.Kernel, shape: Shape, *, seed: int, index: int,
             dist1: str, dist2: str, scalars: str) -> Prepared:
    depth = reduction_depth(sig, kernel, shape.scalars)
    reassoc = reassociated(kernel) if estimate_work(kernel, shape.scalars) <= REASSOC_WORK else None
    found: list[tuple[float, float, float, int, str, Inputs, dict[str, np.ndarray]]] = []
    failure = ""
    for ri, recipe in enumerate(RECIPES):
        x1 = make_inputs(sig, shape, seed_for(seed, index, 1, ri), dist1, recipe)  # scalars in the window
        if x1 is None:
            continue
        r1 = _run(ref, x1)
        if isinstance(r1, str):
            failure = r1
            continue
        if not finite(sig, x1, r1):
            failure = "the reference's output is not finite"
            continue
        try:
            widen, amp, spread = conditioning(ref, sig, depth, x1, r1, seed_for(seed, index, 3, ri), reassoc)
        except Skip as e:
            failure = str(e)
            continue
        found.append((widen, amp, spread, ri, recipe, x1, r1))
        if widen <= 1.0:  # well conditioned: no need to look further
            second = _try_second(ref, sig, shape, seed, index, depth, dist1, dist2, found[-1], reassoc, scalars)
            if isinstance(second, Prepared):
                return second
            failure = second
    # Otherwise the least ill-conditioned recipe, with the tolerance widened accordingly.
    for cand in sorted((c for c in found if c[0] > 1.0), key=lambda c: c[0]):
        second = _try_second(ref, sig, shape, seed, index, depth, dist1, dist2, cand, reassoc, scalars)
        if isinstance(second, Prepared):
            return second
        failure = second
    raise Skip(f"{failure or 'no input recipe applies'} under every input recipe")


def _try_second(ref: Reference, sig: KernelSig, shape: Shape, seed: int, index: int, depth: float, dist1: str,
                dist2: str, first: tuple[float, float, float, int, str, Inputs, dict[str, np.ndarray]],
                reassoc: ir.Module | None = None, scalars: str = "window") -> Prepared | str:
    """The prepared shape, or why ``first`` cannot be used."""
    widen, amp, spread, ri, recipe, x1, r1 = first
    second = _second(ref, sig, shape, seed, index, ri, recipe, dist1, dist2, r1, depth, widen, reassoc, scalars)
    if second is None:
        return "no second input set gives a finite, testable reference output"
    d2, x2, r2, degenerate, widened, widen2 = second
    notes = []
    if recipe != "random":
        notes.append(f"{shape.label}: random inputs gave a non-finite or ill-conditioned reference; "
                     f"used the '{recipe}' recipe")
    if widen > 1:
        notes.append(f"{shape.label}: tolerance widened {widen:.1e}x (amplification {amp:.1e}, "
                     f"rounding spread {spread:.1e})")
    if widen2 > widen:
        notes.append(f"{shape.label}: the second input set ('{d2}') is worse conditioned than the first: "
                     f"its tolerance widened {widen2:.1e}x")
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
    return Prepared(shape, recipe, dist1, d2, x1, x2, r1, r2, depth, amp, widen, ghost, degenerate, notes, spread,
                    widen2)


__all__ = ["DISTRIBUTIONS", "Prepared", "Skip", "amplification", "conditioning", "finite", "prepare",
           "rounding_spread", "spread_widen"]

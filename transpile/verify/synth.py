"""Input synthesis from the reference's typed signature, independent of whatever wrote the kernel.

* **Shapes** (:func:`shapes`): values for the size parameters (integer
  scalars used in extents): tiny (1, 2, 3), off any tile grid (17, 33, 65,
  127, 257, 1025), two non-square assignments, and the requested sizes, kept
  only while an interval bound on the work (:func:`signature.estimate_work`)
  and the memory stay inside the stage's budget.  Other integer scalars (time
  steps) get 2.
* **Distributions** (:data:`DISTRIBUTIONS`): ``signed`` U(-1, 1), ``uniform``
  U(0, 1), ``large`` +-10^U(3, 6), ``tiny`` +-10^U(-6, -3), ``integers``
  (small whole numbers stored as floats).  Integer arrays always get
  non-negative values (their width depends on the distribution), so integer
  sums and min/max recurrences cannot overflow, which would be undefined
  behaviour in the C reference.  An integer input whose values index another
  array (a gather's ``idx``, a histogram's bins, CSR's ``col`` and ``rowptr``:
  :class:`~transpile.verify.signature.IndexUse`) gets values inside that
  array, loop bounds in order, so the reference is defined.  Floating
  scalars (:func:`float_scalar`) are 0, 1, -1, negative, large or in
  U(0.25, 1.25), one kind per scalar and draw (``wide``), or only the last
  (``window``, where the reference is not finite or not informative otherwise).
* **Special values** (:func:`special_values`): Inf, -Inf, NaN, -0.0 and a
  subnormal put into a few elements of the float inputs.
* **Recipes** (:data:`RECIPES`), tried in order until the reference's output is
  finite and well conditioned (see :mod:`transpile.verify.reference`):
  ``random`` (the distribution as drawn), ``spd`` (each square 2-D input
  becomes ``B B^T + n I``), ``diag-dominant`` (its diagonal becomes
  +-(2n..3n) times its largest entry), ``scaled`` (every float input divided
  by twice the largest extent, for recurrences such as Levinson's).
* **Poison** (:func:`poison`): every ``out`` array starts as a quiet NaN with a
  recognisable payload (floats) or the type's extreme value (integers).

Everything is drawn from a ``numpy`` generator seeded by the run's seed, so a
failure is replayed with ``--seed``.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from transpile import ir
from transpile.verify.signature import KernelSig, estimate_work, kernel_sig

Inputs = dict[str, Any]
"""Arguments by parameter name: numpy scalars of the parameter's type, C-contiguous arrays."""

POISON_BITS: dict[str, int] = {"f64": 0x7FF8DEADBEEFCAFE, "f32": 0x7FDEAD5A}
"""Quiet NaNs with a payload: what an ``out`` array holds before the call."""

TINY_SIZES = (1, 2, 3)
OFF_GRID_SIZES = (17, 33, 65, 127, 257, 1025)
NON_SQUARE = (17, 33, 9, 5, 13, 21, 7)
OTHER_INT = 2
BIG_ARRAYS = 4
"""Arrays of fixed extents up to this many times the byte budget get one shape (above: none but n=1)."""


@dataclass(frozen=True)
class Shape:
    """Values of the integer scalars (size parameters and others) for one run, with a label."""

    label: str
    scalars: Mapping[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.scalars.items())
        return f"{self.label} ({inner})" if inner else self.label


def shapes(sig: KernelSig, kernel: ir.Kernel, *, mode: str, requested: Mapping[str, int] | None = None,
           work_budget: float, byte_budget: float = 64e6, extra_sizes: tuple[int, ...] = (),
           seed: int = 0) -> list[Shape]:
    """The shapes a stage runs, in order (small first), within its budgets.

    ``mode`` is ``quick`` (a non-square shape, a shape drawn from ``seed`` without
    a long side, and n=3: the compile-time check), ``full`` (every tiny and off-grid size that
    fits, two non-square assignments, the drawn shape, one drawn shape per size
    parameter with that one long, the requested sizes) or ``requested`` (only
    the requested sizes: the GPU full-size stage).  Drawn shapes
    (:func:`drawn_sizes`) differ from seed to seed, so a kernel keyed on the
    sizes a verifier always uses (nothing above 1024, no size of some residue
    mod 4) meets others.  Sizes stay within the declared extents where fixed
    extents bound them (:func:`limits`).
    """
    sizes = sig.size_params
    base = other_ints(sig, kernel)
    bound = limits(kernel)

    def shape(label: str, values: Mapping[str, int]) -> Shape:
        return Shape(label, {**{n: min(int(values[n]), bound.get(n, int(values[n]))) for n in sizes}, **base})

    def drawn(label: str, index: int, long: str | None) -> list[Shape]:
        values = drawn_sizes(sig, kernel, seed, index, long=long, work_budget=min(work_budget, DRAWN_WORK.get(mode, 4e5)),
                             byte_budget=byte_budget, base=base)
        return [] if values is None else [shape(label, values)]

    cands: list[Shape] = []
    if not sizes:
        cands.append(Shape("fixed", dict(base)))
    elif mode == "requested":
        assert requested is not None
        cands.append(shape("requested", requested))
    else:
        nonsq = {n: NON_SQUARE[i % len(NON_SQUARE)] for i, n in enumerate(sizes)}
        nonsq_rev = {n: NON_SQUARE[i % len(NON_SQUARE)] for i, n in enumerate(reversed(sizes))}
        if mode == "quick":
            # No long side here: the simulator's cost is not the C's work (a block per row runs
            # 256 threads on an 11-wide row), and at compile time a timeout fails the compile.
            cands += [shape("non-square", nonsq), *drawn("drawn", 0, None), shape("n=3", dict.fromkeys(sizes, 3))]
        else:
            cands += [shape(f"n={v}", dict.fromkeys(sizes, v)) for v in TINY_SIZES]
            cands += [shape(f"n={v}", dict.fromkeys(sizes, v)) for v in OFF_GRID_SIZES[:2]]
            cands += [shape("non-square", nonsq), shape("non-square-2", nonsq_rev), *drawn("drawn", 0, None)]
            for i, n in enumerate(sizes):
                cands += drawn(f"long-{n}", i + 1, n)
            cands += [shape(f"n={v}", dict.fromkeys(sizes, v)) for v in (*OFF_GRID_SIZES[2:], *extra_sizes)]
            if requested:
                cands.append(shape("requested", {**dict.fromkeys(sizes, 1), **requested}))
    if sizes and mode != "requested" and not any(max(s.scalars[n] for n in sizes) > max(TINY_SIZES)
                                                 and undefined_at(kernel, s.scalars) is None for s in cands):
        cands.append(_defined_shape(shape, sizes, kernel))  # every shape beyond the tiny ones is undefined
    out: list[Shape] = []
    seen: set[tuple[tuple[str, int], ...]] = set()
    floor = sum(sig.nbytes({**dict.fromkeys(sizes, 1), **base}).values())
    if mode != "requested" and byte_budget < floor <= BIG_ARRAYS * byte_budget:
        # Fixed extents larger than the budget at every size (deriche's 4096 x 2160 images): one shape,
        # the first that fits the work budget, rather than none; its label says why.
        fit = [s for s in cands if estimate_work(kernel, s.scalars) <= work_budget and s.label != "n=1"
               and undefined_at(kernel, s.scalars) is None]
        if fit:
            return [Shape(f"{fit[0].label}, the only shape: the declared arrays take {floor / 1e6:.0f} MB",
                          fit[0].scalars)]
    for s in cands:
        key = tuple(sorted(s.scalars.items()))
        if key in seen:
            continue
        seen.add(key)
        if mode != "requested" and s.label.startswith("non-square"):
            s = _shrink(sig, kernel, s, work_budget, byte_budget)
        if mode == "requested" or (estimate_work(kernel, s.scalars) <= work_budget
                                   and sum(sig.nbytes(s.scalars).values()) <= byte_budget):
            out.append(s)
    return out or [shape("n=1", dict.fromkeys(sizes, 1))] if sizes else out


def reordered_shapes(sig: KernelSig, kernel: ir.Kernel, shape: Shape, *, work_budget: float,
                     byte_budget: float = 64e6, most: int = 4) -> list[Shape]:
    """``shape`` with its sizes' values reordered among the size parameters: reversed (``m=17, n=33`` ->
    ``m=33, n=17``), then rotated by one place at a time (``n, lo, hi = 17, 33, 9`` -> ``33, 9, 17``: a
    loop from ``lo`` to ``hi`` runs); within the declared extents, defined, within the budgets, each
    distinct, at most ``most``.  A shape the reference cannot be tested at (QR of a wide matrix, ``m < n``:
    rank-deficient) or that runs nothing is then tried other ways round."""
    sizes = sig.size_params
    values = [shape.scalars[n] for n in sizes if n in shape.scalars]
    if len(values) != len(sizes) or len(set(values)) < 2:
        return []
    bound = limits(kernel)
    orders = [("reversed", values[::-1])] + [(f"rotated{k}", values[-k:] + values[:-k]) for k in range(1, len(values))]
    out: list[Shape] = []
    seen = [dict(shape.scalars)]
    for label, order in orders:
        new = {**shape.scalars, **{n: min(v, bound.get(n, v)) for n, v in zip(sizes, order)}}
        if new in seen or undefined_at(kernel, new) is not None:
            continue
        if estimate_work(kernel, new) > work_budget or sum(sig.nbytes(new).values()) > byte_budget:
            continue
        seen.append(new)
        out.append(Shape(f"{shape.label}-{label}", new))
    return out[:most]


def alternates(sig: KernelSig, kernel: ir.Kernel, shape: Shape, *, work_budget: float,
               byte_budget: float = 64e6) -> list[Shape]:
    """Shapes to try when ``shape`` tests nothing (the reference cannot be tested there, or it leaves
    every output unchanged: ``for (i = 0; i + m < n; i++)`` at ``m > n``, ``if (flag) return;`` at
    ``flag = 2``): its sizes reordered (:func:`reordered_shapes`), then the integers that are not sizes at
    0 and at 1 (``flag = 0``), where the front end's run-time checks allow those values."""
    out = reordered_shapes(sig, kernel, shape, work_budget=work_budget, byte_budget=byte_budget)
    checked = {n for c in step_checks(kernel) for n in ir.var_names(c)}
    free = [n for n in sig.other_ints if n not in checked]
    for v in (0, 1):
        new = {**shape.scalars, **dict.fromkeys(free, v)}
        if free and new != dict(shape.scalars) and undefined_at(kernel, new) is None \
                and estimate_work(kernel, new) <= work_budget and sum(sig.nbytes(new).values()) <= byte_budget:
            out.append(Shape(f"{shape.label}-{'-'.join(free)}={v}", new))
    return out


PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97, 101,
          103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167, 173, 179, 181, 191, 193, 197, 199)
LONG_RANGE = (1025, 4096)
DRAWN_WORK = {"quick": 4e5, "full": 2e6}
"""A drawn shape's work at most (sizes rounded up to :data:`TILE_PAD`), by mode: its point is its
sizes (residues, primes, one long side), not its work."""
TILE_PAD = 32
"""A long dimension of a drawn shape: above 1024 (the largest size a fixed list used to hold)."""


def drawn_sizes(sig: KernelSig, kernel: ir.Kernel, seed: int, index: int, *, long: str | None,
                work_budget: float, byte_budget: float, base: Mapping[str, int] | None = None) -> dict[str, int] | None:
    """Sizes drawn from ``seed`` (deterministic: ``random.Random`` seeded by the seed, ``index`` and the
    parameter names), or None when no drawn shape fits the budgets.

    Each size is a residue mod 32 drawn uniformly plus a multiple of 32 (so every residue comes up
    over the seeds, 0 as 32, 64 ..), or a prime; ``long`` (a size parameter) is drawn in
    :data:`LONG_RANGE`.  To fit the work and memory budgets the other sizes come down 32 at a time
    (their residues kept), then the long one; then they go to 3 and 1; within the declared extents
    (:func:`limits`)."""
    sizes = sig.size_params
    rng = random.Random(f"{seed}:{index}:{','.join(sizes)}")
    bound = limits(kernel)
    values: dict[str, int] = {}
    for n in sizes:
        r = rng.randrange(32)
        if n == long:
            v = LONG_RANGE[0] + rng.randrange(LONG_RANGE[1] - LONG_RANGE[0])
        elif rng.random() < 0.25:
            v = rng.choice(PRIMES[:20])
        else:
            v = r + 32 * rng.randrange(0, 3) or 32
        values[n] = max(1, min(v, bound.get(n, v)))
    env = dict(base or {})

    def fits() -> bool:
        full = {**env, **values}
        # The work of the sizes rounded up to a tile (a tiled launch simulates whole tiles: 3mm's
        # nj=1, nl=65, nm=3035 was 64 times its C work in the simulator, past its time limit).
        padded = {**env, **{n: -(-v // TILE_PAD) * TILE_PAD for n, v in values.items()}}
        return estimate_work(kernel, padded) <= work_budget and sum(sig.nbytes(full).values()) <= byte_budget

    order = [n for n in sizes if n != long] + ([long] if long in sizes else [])
    for n in order:  # 32 at a time: the residues stay
        while not fits() and values[n] > 32:
            values[n] -= 32
    for n in order:
        for smaller in (3, 1):
            if not fits() and smaller < values[n]:
                values[n] = smaller
    return values if fits() else None


def step_checks(kernel: ir.Kernel) -> list[ir.Expr]:
    """The conditions of the checks the front end put before the loops, ``if (cond) trap`` at the top
    level (a run-time loop step of the wrong sign)."""
    return [s.cond for s in kernel.body
            if isinstance(s, ir.If) and len(s.then) == 1 and isinstance(s.then[0], ir.Trap) and not s.orelse]


def other_ints(sig: KernelSig, kernel: ir.Kernel) -> dict[str, int]:
    """The values of the integer parameters that are not sizes: :data:`OTHER_INT`, or where a check
    the front end put before the loops (``if (lo < hi && dec >= 0) trap``: a run-time loop step of the
    wrong sign, C's endless loop) would stop the function at every size, the first of ``-2, 1, -1``
    that passes it (``for (i = n - 1; i >= 0; i += dec)`` is tested at ``dec = -2``)."""
    return dict(_other_ints(tuple(sig.other_ints), tuple(sig.size_params), kernel))


@functools.lru_cache(maxsize=64)
def _other_ints(names: tuple[str, ...], sizes: tuple[str, ...], kernel: ir.Kernel) -> tuple[tuple[str, int], ...]:
    from transpile.ir.cscalars import fold

    values = dict.fromkeys(names, OTHER_INT)
    checks = step_checks(kernel)
    if not checks:
        return tuple(values.items())
    types = {p.name: p.ty for p in kernel.params if isinstance(p.ty, ir.Scalar)}

    def stops(trial: Mapping[str, int]) -> bool:
        table: dict[str, ir.Expr] = {n: ir.const(8, types[n]) for n in sizes if n in types}
        table.update({n: ir.const(v, types[n]) for n, v in trial.items() if n in types})
        return any(fold(ir.substitute(c, table)) not in (0, None) for c in checks)

    for n in names:
        if not stops(values) or not any(n in ir.var_names(c) for c in checks):
            continue
        for v in (-OTHER_INT, 1, -1):
            if not stops({**values, n: v}):
                values[n] = v
                break
    return tuple(values.items())


def limits(kernel: ir.Kernel) -> dict[str, int]:
    """The largest value of each size parameter that fixed extents allow (``ni <= 1000`` for
    ``double C[NI][NJ]`` with ``NI`` 1000, :func:`passes.bounds.extent_limits`); none for others."""
    return dict(_limits(kernel))


@functools.lru_cache(maxsize=64)
def _limits(kernel: ir.Kernel) -> tuple[tuple[str, int], ...]:
    from passes import bounds

    return tuple(bounds.extent_limits(kernel, list(_out_of_bounds(kernel))).items())


@functools.lru_cache(maxsize=64)
def _out_of_bounds(kernel: ir.Kernel) -> tuple[Any, ...]:
    from passes import bounds

    return tuple(bounds.check(kernel))


def undefined_at(kernel: ir.Kernel, scalars: Mapping[str, int]) -> str | None:
    """Why the C program has no defined result at these sizes, or None: the first reference that
    :func:`passes.bounds.check` proves to leave its array there (the CLI warns of it as
    ``out-of-bounds``). Comparing at such sizes would blame the CUDA for the C's undefined
    behaviour, so the stages skip them (:func:`transpile.verify.prepare.prepare`)."""
    for f in _out_of_bounds(kernel):
        try:
            if f.holds(dict(scalars)):
                where = f" ({f.loc.file}:{f.loc.line}:{f.loc.col})" if f.loc else ""
                return (f"'{f.array}' is {'written' if f.write else 'read'} outside its extent there{where}: "
                        "the C program's behaviour is undefined")
        except KeyError:  # a parameter the shape does not give: not decidable here
            continue
    sig = _signature(kernel)
    for name in dict.fromkeys(u.array for u in sig.indices):
        arg = next(a for a in sig.arrays if a.name == name)
        try:
            empty = math.prod(sig.shape(arg, scalars)) == 0
        except ValueError:
            continue
        if not empty and sig.index_range(name, scalars) is None:
            targets = sorted({u.target for u in sig.indices if u.array == name})
            return (f"'{name}' holds indices into {', '.join(repr(t) for t in targets)}, which leave(s) no room for "
                    "them there: every value would be out of bounds")
    return None


@functools.lru_cache(maxsize=64)
def _signature(kernel: ir.Kernel) -> KernelSig:
    return kernel_sig(kernel)


def _defined_shape(shape: Callable[[str, Mapping[str, int]], Shape], sizes: tuple[str, ...] | list[str],
                   kernel: ir.Kernel) -> Shape:
    """A small shape at which the program is defined, when none of the usual ones beyond the tiny
    sizes is (sizes tied by a precondition such as ``n <= m``): of the first sizes in [4, 40] found
    defined in a fixed pseudo-random sequence, the one of least work; ``n=1`` when none is."""
    rng = random.Random(0)
    found: list[Shape] = []
    for _ in range(400):
        s = shape("defined", {n: rng.randint(max(TINY_SIZES) + 1, 40) for n in sizes})
        if undefined_at(kernel, s.scalars) is None:
            found.append(s)
            if len(found) == 8:
                break
    if not found:
        return shape("n=1", dict.fromkeys(sizes, 1))
    return min(found, key=lambda s: estimate_work(kernel, s.scalars))


def _shrink(sig: KernelSig, kernel: ir.Kernel, s: Shape, work_budget: float, byte_budget: float) -> Shape:
    """Halve the sizes of a non-square shape until it fits the budgets (keeping them odd and distinct)."""
    scalars = dict(s.scalars)
    for _ in range(8):
        if estimate_work(kernel, scalars) <= work_budget and sum(sig.nbytes(scalars).values()) <= byte_budget:
            break
        scalars = {n: (max(3, v // 2) | 1) if n in sig.size_params else v for n, v in scalars.items()}
    return Shape(s.label, scalars)


def default_full_sizes(sig: KernelSig, kernel: ir.Kernel, *, work_budget: float = 2e9,
                       byte_budget: float = 1.5e9) -> dict[str, int]:
    """Sizes for the full-size GPU stage when none were requested: the largest
    power of two (at most 8192) for every size parameter that fits the budgets."""
    bound = limits(kernel)
    if bound and set(bound) >= set(sig.size_params):  # fixed extents: the sizes they were declared for
        env = {**bound, **other_ints(sig, kernel)}
        if estimate_work(kernel, env) <= work_budget and sum(sig.nbytes(env).values()) <= byte_budget:
            return {n: bound[n] for n in sig.size_params}
    best = 1
    for e in range(4, 14):
        v = 2 ** e
        env = {**{n: min(v, bound.get(n, v)) for n in sig.size_params}, **other_ints(sig, kernel)}
        if estimate_work(kernel, env) > work_budget or sum(sig.nbytes(env).values()) > byte_budget:
            break
        best = v
    return {n: min(best, bound.get(n, best)) for n in sig.size_params}


# ---------------------------------------------------------------------------
# Distributions


def _signed_magnitude(rng: np.random.Generator, shape: tuple[int, ...], lo: float, hi: float) -> np.ndarray:
    return rng.choice([-1.0, 1.0], size=shape) * 10.0 ** rng.uniform(lo, hi, size=shape)


DISTRIBUTIONS: dict[str, Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]] = {
    "signed": lambda rng, shape: rng.uniform(-1.0, 1.0, size=shape),
    "uniform": lambda rng, shape: rng.uniform(0.0, 1.0, size=shape),
    "large": lambda rng, shape: _signed_magnitude(rng, shape, 3.0, 6.0),
    "tiny": lambda rng, shape: _signed_magnitude(rng, shape, -6.0, -3.0),
    "integers": lambda rng, shape: rng.integers(-8, 9, size=shape).astype(np.float64),
}
"""Float array distributions by name."""

_INT_RANGES: dict[str, int] = {"signed": 100, "uniform": 1000, "large": 1 << 16, "tiny": 3, "integers": 10}


def _int_array(rng: np.random.Generator, shape: tuple[int, ...], dist: str, dtype: np.dtype,
               index: tuple[int, int, bool] | None = None) -> np.ndarray:
    """Non-negative integers, as wide as ``dist`` says; for an index array (``index``: its valid
    ``lo..hi`` and whether its values are loop bounds, :meth:`KernelSig.index_range`), inside
    ``lo..hi`` (as wide as ``dist`` says from ``lo``: ``tiny`` makes many equal indices) and, for
    bounds, in non-decreasing order."""
    width = _INT_RANGES.get(dist, 100)
    if index is None:
        return rng.integers(0, min(width, int(np.iinfo(dtype).max)) + 1, size=shape).astype(dtype)
    lo, hi, ordered = index
    values = rng.integers(lo, min(hi, lo + width) + 1, size=shape)
    if ordered:
        values = np.sort(values, axis=None).reshape(shape)
    return values.astype(dtype)


def poison(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """An array of the poison value for ``dtype``."""
    if dtype.kind == "f":
        bits = POISON_BITS["f64" if dtype.itemsize == 8 else "f32"]
        ui = np.uint64 if dtype.itemsize == 8 else np.uint32
        return np.full(shape, bits, dtype=ui).view(dtype)
    info = np.iinfo(dtype)
    return np.full(shape, info.min if dtype.kind == "i" else info.max, dtype=dtype)


SCALAR_KINDS = ("zero", "one", "minus-one", "negative", "large", "window")
"""What a float scalar is drawn as in ``wide`` mode (:func:`float_scalar`), one kind per scalar and draw."""


def float_scalar(rng: np.random.Generator, mode: str = "wide", position: int = 0) -> float:
    """A float scalar: ``window`` U(0.25, 1.25) (the only values before issue 38, so a kernel could
    key on them); ``wide`` one of :data:`SCALAR_KINDS` at random: 0, 1, -1, a negative value
    -U(0.25, 4), a large magnitude +-10^U(2, 6), or the window; ``kind:K`` the kind
    ``(K + 3 * position) % 6`` for the scalar at ``position`` among the float scalars (the stage
    gives consecutive K to the input sets of a shape, so that a few shapes draw every kind)."""
    if mode.startswith("kind:"):
        kind = SCALAR_KINDS[(int(mode[5:]) + 3 * position) % len(SCALAR_KINDS)]
    else:
        kind = "window" if mode == "window" else SCALAR_KINDS[int(rng.integers(len(SCALAR_KINDS)))]
    if kind == "zero":
        return 0.0
    if kind == "one":
        return 1.0
    if kind == "minus-one":
        return -1.0
    if kind == "negative":
        return -float(rng.uniform(0.25, 4.0))
    if kind == "large":
        return float(rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(2.0, 6.0))
    return float(rng.uniform(0.25, 1.25))


FILLS = ("nan", "zero", "random")
"""What an ``out`` array holds before a call: the NaN poison, zeros, or random finite values."""


def fill(dtype: np.dtype, shape: tuple[int, ...], how: str, rng: np.random.Generator) -> np.ndarray:
    """An ``out`` array's content before a call (:data:`FILLS`)."""
    if how == "zero":
        return np.zeros(shape, dtype=dtype)
    if how == "random":
        if dtype.kind == "f":
            return np.ascontiguousarray(rng.uniform(-1.0, 1.0, size=shape), dtype=dtype)
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -1000), min(info.max, 1000) + 1, size=shape).astype(dtype)
    return poison(dtype, shape)


def draw(sig: KernelSig, shape: Shape, rng: np.random.Generator, dist: str, *, scalars: str = "window",
         out_fill: str = "nan") -> Inputs:
    """Fresh inputs for ``shape`` from distribution ``dist`` (``out`` arrays filled as ``out_fill``
    says, the poison by default); float scalars as :func:`float_scalar` draws them in mode ``scalars``."""
    args: Inputs = {}
    position = 0
    for a in sig.args:
        if a.role in ("size", "int"):
            args[a.name] = a.dtype.type(shape.scalars[a.name])
        elif a.role == "float":
            args[a.name] = a.dtype.type(float_scalar(rng, scalars, position))
            position += 1
    for a in sig.arrays:
        shp = sig.shape(a, args)
        if a.intent == "out":
            args[a.name] = fill(a.dtype, shp, out_fill, rng)
        elif a.dtype.kind == "f":
            args[a.name] = np.ascontiguousarray(DISTRIBUTIONS[dist](rng, shp), dtype=a.dtype)
        else:
            args[a.name] = _int_array(rng, shp, dist, a.dtype, sig.index_range(a.name, args))
    return args


# ---------------------------------------------------------------------------
# Recipes


def _square_inputs(sig: KernelSig, args: Inputs) -> list[str]:
    return [a.name for a in sig.arrays if a.intent != "out" and a.dtype.kind == "f"
            and args[a.name].ndim == 2 and args[a.name].shape[0] == args[a.name].shape[1]
            and args[a.name].shape[0] > 0]


def _spd(sig: KernelSig, args: Inputs, rng: np.random.Generator) -> bool:
    names = _square_inputs(sig, args)
    for n in names:
        b = args[n].astype(np.float64)
        k = b.shape[0]
        scale = max(float(np.abs(b).max()), 1e-300)
        args[n] = np.ascontiguousarray(b @ b.T + k * scale * scale * np.eye(k), dtype=args[n].dtype)
    return bool(names)


def _diag_dominant(sig: KernelSig, args: Inputs, rng: np.random.Generator) -> bool:
    names = _square_inputs(sig, args)
    for n in names:
        a = args[n].copy()
        k = a.shape[0]
        scale = max(float(np.abs(a).max()), 1e-300)
        a[np.diag_indices(k)] = rng.choice([-1.0, 1.0], size=k) * rng.uniform(2 * k, 3 * k, size=k) * scale
        args[n] = a
    return bool(names)


def _scaled(sig: KernelSig, args: Inputs, rng: np.random.Generator) -> bool:
    arrays = [a for a in sig.arrays if a.intent != "out" and a.dtype.kind == "f" and args[a.name].size]
    if not arrays:
        return False
    extent = max(max(args[a.name].shape) for a in arrays)
    for a in arrays:
        args[a.name] = np.ascontiguousarray(args[a.name] / (2.0 * max(extent, 1)), dtype=a.dtype)
    return True


RECIPES: dict[str, Callable[[KernelSig, Inputs, np.random.Generator], bool] | None] = {
    "random": None,
    "spd": _spd,
    "diag-dominant": _diag_dominant,
    "scaled": _scaled,
}
"""Structured input recipes, in the order they are tried; each returns whether it applied."""


def make_inputs(sig: KernelSig, shape: Shape, rng: np.random.Generator, dist: str, recipe: str, *,
                scalars: str = "window") -> Inputs | None:
    """Inputs from ``dist`` transformed by ``recipe``; None if the recipe does not apply to this signature."""
    args = draw(sig, shape, rng, dist, scalars=scalars)
    fn = RECIPES[recipe]
    if fn is not None and not fn(sig, args, rng):
        return None
    return args


def copy_inputs(args: Inputs) -> Inputs:
    """A deep copy (arrays copied) of ``args``."""
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}


def seed_for(master: int, *parts: int) -> np.random.Generator:
    """A generator for one draw, derived from the run's master seed and the draw's coordinates."""
    return np.random.default_rng(np.random.SeedSequence([master & 0xFFFFFFFFFFFFFFFF, *parts]))


def transfer_bytes(sig: KernelSig, env: Mapping[str, int | float]) -> int:
    """Bytes a kernel must move at least: inputs read once, outputs written once (inout both)."""
    sizes = sig.nbytes(env)
    factor = {"in": 1, "out": 1, "inout": 2}
    return sum(sizes[a.name] * factor[a.intent] for a in sig.arrays)


def elements(sig: KernelSig, env: Mapping[str, int | float]) -> int:
    """Output elements for the scalars in ``env``."""
    return sum(math.prod(sig.shape(a, env)) for a in sig.outputs)


def special_values(sig: KernelSig, args: Inputs, rng: np.random.Generator) -> Inputs | None:
    """``args`` with a few float input elements replaced by Inf, -Inf, NaN, -0.0 and the smallest
    subnormal (each of them once per array, at random distinct elements; as many as fit in an array
    of fewer than five elements, starting at a random one), or None when the kernel has no float
    input array."""
    out = copy_inputs(args)
    changed = False
    for a in sig.arrays:
        if a.intent == "out" or a.dtype.kind != "f" or not out[a.name].size:
            continue
        flat = out[a.name].reshape(-1)
        tiny = float(np.finfo(a.dtype).smallest_subnormal)
        values = [math.inf, -math.inf, math.nan, -0.0, tiny]
        k = min(len(values), flat.size)
        start = int(rng.integers(len(values)))
        for v, at in zip(range(k), rng.choice(flat.size, size=k, replace=False)):
            flat[int(at)] = values[(start + v) % len(values)]
        changed = True
    return out if changed else None


def perturb_one(sig: KernelSig, args: Inputs, rng: np.random.Generator, dist: str) -> Inputs:
    """``args`` with one element of each float input array (of two or more elements) redrawn from
    ``dist`` (sizes, scalars and every other element kept): a result memoised on pointers, sizes,
    scalars or a few sampled elements is stale here.  The element is chosen at random away from the
    first, the middle and the last (where a sampling memo looks first) when the array has others."""
    out = copy_inputs(args)
    for a in sig.arrays:
        if a.intent == "out" or a.dtype.kind != "f" or out[a.name].size < 2:
            continue
        flat = out[a.name].reshape(-1)
        n = flat.size
        cands = [i for i in range(n) if i not in (0, n // 2, n - 1)] or list(range(n))
        i = cands[int(rng.integers(len(cands)))]
        old = flat[i]
        for _ in range(8):
            flat[i] = DISTRIBUTIONS[dist](rng, (1,))[0]
            if flat[i] != old:
                break
        if flat[i] == old:
            flat[i] = old + 1
    return out

"""The anti-gaming checks on one run's results: comparison, poison, guards, inputs.

Error measure (docs/verify.md): for a float output ``r`` (reference) and ``c``
(candidate), element ``i`` has relative error
``|c_i - r_i| / max(|r_i|, 1e-3 * max_j |r_j|)``: relative where the element
is of the array's scale, absolute (in units of the scale) where it is tiny, so
cancellation does not blow up the measure.  NaN never passes: a NaN in ``c``
where ``r`` is not NaN has infinite error.  Elements the reference left alone
(still bitwise equal to their initial value) must stay equal too.  Integers
must match exactly.

The tolerance is ``base(dtype) * sqrt(depth) * widen``: ``base`` is 1e-10 for
f64 and 1e-5 for f32, ``depth`` the reduction depth (the average number of
updates behind one output element, see :func:`signature.reduction_depth`),
``widen`` >= 1 only for ill-conditioned inputs (the measured amplification of
a 1e-13 input perturbation divided by 1e4).

A wrong element is classified: ``unwritten-output`` (it still holds its
initial value: the poison for ``out`` arrays, the input for ``inout`` ones,
while the reference changed it), ``nan-output`` (NaN where the reference has a
number: poisoned or uninitialised memory was read), ``mismatch`` (error above
1e-3), ``precision`` (error between the tolerance and 1e-3: lower-precision
arithmetic or a loose shortcut).  The array's verdict is the most serious
class present, in the order nan-output, mismatch, unwritten-output, precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TOL_BASE = {"f64": 1e-10, "f32": 1e-5}
"""Tolerance before scaling by sqrt(reduction depth)."""
SCALE_FLOOR = 1e-3
"""Elements below this fraction of the array's largest magnitude are compared in absolute terms."""
BIG_ERROR = 1e-3
"""Errors above this are a ``mismatch``; between the tolerance and this, a ``precision`` failure."""
SEVERITY = ("nan-output", "mismatch", "unwritten-output", "precision")
GUARD_BYTES = 256
"""Bytes of guard zone on each side of every host buffer."""


def float_kind(dtype: np.dtype) -> str:
    """The key of a float ``dtype`` in the per-precision tables (``TOL_BASE``, ...): "f64" or "f32"."""
    return "f64" if dtype.itemsize >= 8 else "f32"


def tolerance(dtype: np.dtype, depth: float, widen: float = 1.0) -> float:
    """The max relative error allowed for an output of ``dtype`` (0: exact)."""
    if dtype.kind != "f":
        return 0.0
    base = TOL_BASE[float_kind(dtype)]
    return base * math.sqrt(max(depth, 1.0)) * max(widen, 1.0)


def bits(a: np.ndarray) -> np.ndarray:
    """The elements' bit patterns (so NaN payloads compare exactly)."""
    a = np.ascontiguousarray(a)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.itemsize in (1, 2, 4, 8) else a


def same_bits(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise bitwise equality."""
    return bits(a) == bits(b)


def rel_errors(c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Per-element error of ``c`` against ``r`` (float64; inf where one side is NaN and the other not)."""
    c64, r64 = c.astype(np.float64), r.astype(np.float64)
    finite = np.isfinite(r64)
    scale = float(np.abs(r64[finite]).max()) if finite.any() else 0.0
    denom = np.maximum(np.abs(r64), max(SCALE_FLOOR * scale, 1e-300))
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(c64 - r64) / denom
    err = np.where(np.isnan(c64) != np.isnan(r64), np.inf, err)
    err = np.where(np.isnan(c64) & np.isnan(r64), 0.0, err)
    err = np.where(np.isinf(r64) & (c64 == r64), 0.0, err)
    return np.nan_to_num(err, nan=np.inf)


def max_rel_error(c: np.ndarray, r: np.ndarray) -> float:
    """The largest per-element error (0 for empty arrays)."""
    if c.dtype.kind != "f":
        return 0.0 if np.array_equal(c, r) else math.inf
    return float(rel_errors(c, r).max()) if c.size else 0.0


@dataclass
class Comparison:
    """The verdict on one output array."""

    name: str
    ok: bool
    kind: str | None
    max_err: float
    tol: float
    bad: int
    total: int
    first_bad: tuple[int, ...] | None
    counts: dict[str, int]

    def message(self) -> str:
        """A one-line description free of input and output values."""
        where = f", first at {_index(self.first_bad)}" if self.first_bad is not None else ""
        if self.ok:
            return f"{self.name}: max error {self.max_err:.2e} (tolerance {self.tol:.1e})"
        what = {
            "nan-output": "are NaN where the reference has a number (read of poisoned or uninitialised memory?)",
            "mismatch": "are wrong",
            "unwritten-output": "still hold their initial value where the reference wrote a new one (not written?)",
            "precision": "are slightly off (lower-precision arithmetic?)",
        }[self.kind or "mismatch"]
        n = self.counts.get(self.kind or "mismatch", self.bad)
        err = "" if self.tol == 0 else f"; max error {self.max_err:.2e}, tolerance {self.tol:.1e}"
        return f"{self.name}: {n} of {self.total} elements {what}{where}{err}"


    def brief(self) -> str:
        """``C: 3 of 64 elements wrong (max error ..., tolerance ...)``, without a diagnosis."""
        err = "" if self.tol == 0 else f" (max error {self.max_err:.2e}, tolerance {self.tol:.1e})"
        return f"{self.name}: {self.bad} of {self.total} elements wrong{err}"


def _index(ix: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in ix) if ix else "[0]"


def compare(name: str, cand: np.ndarray, ref: np.ndarray, initial: np.ndarray, tol: float) -> Comparison:
    """Compare output ``name``: the candidate's ``cand`` against the reference's ``ref``,
    both started from ``initial`` (the buffer's content before the call)."""
    total = int(ref.size)
    if total == 0:
        return Comparison(name, True, None, 0.0, tol, 0, 0, None, {})
    if cand.shape != ref.shape:
        return Comparison(name, False, "mismatch", math.inf, tol, total, total, None, {"mismatch": total})
    untouched = same_bits(ref, initial)  # the reference left these alone: the candidate must too
    cand_initial = same_bits(cand, initial)
    if ref.dtype.kind == "f":
        err = rel_errors(cand, ref)
        err = np.where(untouched, np.where(cand_initial, 0.0, np.where(same_bits(cand, ref), 0.0, np.inf)), err)
        bad = err > tol
        max_err = float(err.max())
        c_nan = np.isnan(cand.astype(np.float64))
    else:
        err = (cand != ref).astype(np.float64)
        bad = err > 0
        max_err = 0.0 if not bad.any() else math.inf
        c_nan = np.zeros(ref.shape, dtype=bool)
    classes = {
        "unwritten-output": bad & cand_initial & ~untouched,
        "nan-output": bad & ~cand_initial & c_nan,
    }
    rest = bad & ~classes["unwritten-output"] & ~classes["nan-output"]
    classes["mismatch"] = rest & (err > BIG_ERROR) if ref.dtype.kind == "f" else rest
    classes["precision"] = rest & ~classes["mismatch"]
    counts = {k: int(v.sum()) for k, v in classes.items() if v.any()}
    nbad = int(bad.sum())
    if not nbad:
        return Comparison(name, True, None, max_err, tol, 0, total, None, {})
    kind = next(k for k in SEVERITY if counts.get(k))
    first = tuple(int(i) for i in np.argwhere(classes[kind])[0])
    return Comparison(name, False, kind, max_err, tol, nbad, total, first, counts)


# ---------------------------------------------------------------------------
# Host buffers with guard zones


class HostBuffers:
    """Host copies of the array arguments, each in the middle of a larger allocation.

    The margins (``GUARD_BYTES`` on each side) hold a pattern; :meth:`violations`
    names every array whose margins changed (a write before or past its end).
    """

    def __init__(self, arrays: dict[str, np.ndarray], pattern_seed: int = 0) -> None:
        rng = np.random.default_rng(pattern_seed)
        self.raw: dict[str, np.ndarray] = {}
        self.views: dict[str, np.ndarray] = {}
        self.front: dict[str, np.ndarray] = {}
        self.back: dict[str, np.ndarray] = {}
        for name, a in arrays.items():
            a = np.ascontiguousarray(a)
            raw = np.empty(GUARD_BYTES * 2 + a.nbytes + a.dtype.itemsize, dtype=np.uint8)
            # Align the middle to the element size (the raw buffer is 16-byte aligned by numpy).
            start = GUARD_BYTES
            raw[:start] = rng.integers(0, 256, start, dtype=np.uint8)
            raw[start + a.nbytes:] = rng.integers(0, 256, raw.size - start - a.nbytes, dtype=np.uint8)
            view = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
            view[...] = a
            self.raw[name] = raw
            self.views[name] = view
            self.front[name] = raw[:start].copy()
            self.back[name] = raw[start + a.nbytes:].copy()

    def address(self, name: str) -> int:
        """The address of array ``name``'s first element (never null, even when empty)."""
        return int(self.raw[name].ctypes.data) + GUARD_BYTES

    def violations(self) -> list[str]:
        """One line per array whose guard zones were written."""
        out = []
        for name, raw in self.raw.items():
            n = self.views[name].nbytes
            before = int((raw[:GUARD_BYTES] != self.front[name]).sum())
            after = int((raw[GUARD_BYTES + n:] != self.back[name]).sum())
            if before or after:
                parts = ([f"{before} byte(s) before its start"] if before else []) + \
                        ([f"{after} byte(s) past its end"] if after else [])
                out.append(f"host array '{name}': {' and '.join(parts)} overwritten")
        return out

    def arrays(self) -> dict[str, np.ndarray]:
        """Copies of the arrays' current contents."""
        return {k: v.copy() for k, v in self.views.items()}

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
import mmap
from dataclasses import dataclass
from typing import Any

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
    over_bound: int = 0
    """Elements within the tolerance but past their per-element error bound (``compare``'s ``bound``)."""

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
        if self.over_bound and self.kind == "precision":
            err += (f"; {self.over_bound} element(s) past the error bound c*H*u*M of the computation itself "
                    "(transpile/verify/bound.py)")
        return f"{self.name}: {n} of {self.total} elements {what}{where}{err}"


    def brief(self) -> str:
        """``C: 3 of 64 elements wrong (max error ..., tolerance ...)``, without a diagnosis."""
        err = "" if self.tol == 0 else f" (max error {self.max_err:.2e}, tolerance {self.tol:.1e})"
        return f"{self.name}: {self.bad} of {self.total} elements wrong{err}"


def _index(ix: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in ix) if ix else "[0]"


def compare(name: str, cand: np.ndarray, ref: np.ndarray, initial: np.ndarray, tol: float,
            bound: np.ndarray | None = None) -> Comparison:
    """Compare output ``name``: the candidate's ``cand`` against the reference's ``ref``,
    both started from ``initial`` (the buffer's content before the call).

    ``bound``: a per-element bound on ``|cand - ref|`` (absolute, :mod:`transpile.verify.bound`)
    that every finite element must also meet; an element within the tolerance but past its bound
    is a ``precision`` failure."""
    total = int(ref.size)
    if total == 0:
        return Comparison(name, True, None, 0.0, tol, 0, 0, None, {})
    if cand.shape != ref.shape:
        return Comparison(name, False, "mismatch", math.inf, tol, total, total, None, {"mismatch": total})
    untouched = same_bits(ref, initial)  # the reference left these alone: the candidate must too
    cand_initial = same_bits(cand, initial)
    if ref.dtype.kind == "f":
        err = rel_errors(cand, ref)
        # Left alone by the reference: the candidate must leave the same bits, or a NaN where it is NaN
        # (a NaN input propagated keeps its payload in one order of operations and not in another).
        both_nan = np.isnan(cand.astype(np.float64)) & np.isnan(ref.astype(np.float64))
        # A zero whose bits match the initial ones may be a computed zero, its sign set by the order of
        # the additions (gemm: -0.0 * beta + -0.0 in C, +0.0 from a sum started at zero): either sign.
        both_zero = (cand == 0) & (ref == 0)
        err = np.where(untouched, np.where(cand_initial | same_bits(cand, ref) | both_nan | both_zero, 0.0, np.inf),
                       err)
        bad = err > tol
        n_over = 0
        if bound is not None and bound.shape == ref.shape:
            c64, r64 = cand.astype(np.float64), ref.astype(np.float64)
            with np.errstate(invalid="ignore", over="ignore"):
                over = np.isfinite(r64) & ~untouched & ~(np.abs(c64 - r64) <= bound)
            # Past the bound yet within the tolerance: reported at the tolerance's edge (a precision failure).
            err = np.where(over & ~bad, np.maximum(err, np.nextafter(tol, np.inf)), err)
            n_over = int((over & ~bad).sum())
            bad = bad | over
        max_err = float(err.max())
        c_nan = np.isnan(cand.astype(np.float64))
    else:
        err = (cand != ref).astype(np.float64)
        bad = err > 0
        max_err = 0.0 if not bad.any() else math.inf
        c_nan = np.zeros(ref.shape, dtype=bool)
        n_over = 0
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
    return Comparison(name, False, kind, max_err, tol, nbad, total, first, counts, n_over)


# ---------------------------------------------------------------------------
# Host buffers with guard zones, inputs read-only during the call


PAGE = mmap.PAGESIZE


class HostBuffers:
    """Host copies of the array arguments, each at the start of its own page-aligned mapping.

    Each array starts on a page boundary after a page whose last ``GUARD_BYTES`` are a guard zone,
    and is followed by ``GUARD_BYTES`` more; :meth:`violations` names every array whose guard zones
    changed (a write before or past its end).  :meth:`load` refills the same buffers (same
    addresses) with other contents, so a later call can be made on the same pointers.
    :meth:`protect` makes the pages of the named arrays read-only for the duration of a call
    (:class:`ReadOnlyGuard` reports a write to them as ``input-modified-during-call``); the pages
    also hold the back guard zone, so a write just past the end of a read-only input is reported
    the same way.
    """

    def __init__(self, arrays: dict[str, np.ndarray], pattern_seed: int = 0) -> None:
        rng = np.random.default_rng(pattern_seed)
        self.maps: dict[str, mmap.mmap] = {}
        self.raw: dict[str, np.ndarray] = {}
        self.views: dict[str, np.ndarray] = {}
        self.front: dict[str, np.ndarray] = {}
        self.back: dict[str, np.ndarray] = {}
        self.span: dict[str, int] = {}
        for name, a in arrays.items():
            a = np.ascontiguousarray(a)
            span = -(-(a.nbytes + GUARD_BYTES) // PAGE) * PAGE
            m = mmap.mmap(-1, PAGE + span)
            # raw: the front guard zone, the array (page-aligned), the back guard and the page's rest
            raw = np.frombuffer(m, dtype=np.uint8)[PAGE - GUARD_BYTES:]
            raw[:GUARD_BYTES] = rng.integers(0, 256, GUARD_BYTES, dtype=np.uint8)
            raw[GUARD_BYTES + a.nbytes:] = rng.integers(0, 256, raw.size - GUARD_BYTES - a.nbytes, dtype=np.uint8)
            view = raw[GUARD_BYTES:GUARD_BYTES + a.nbytes].view(a.dtype).reshape(a.shape)
            view[...] = a
            self.maps[name], self.raw[name], self.views[name], self.span[name] = m, raw, view, span
            self.front[name] = raw[:GUARD_BYTES].copy()
            self.back[name] = raw[GUARD_BYTES + a.nbytes:].copy()

    def load(self, arrays: dict[str, np.ndarray]) -> None:
        """Put ``arrays`` (same names and byte sizes, shapes may differ) into the same buffers."""
        for name, a in arrays.items():
            a = np.ascontiguousarray(a)
            view = self.views[name]
            if a.nbytes != view.nbytes:
                raise ValueError(f"'{name}': {a.nbytes} bytes do not fit the buffer of {view.nbytes}")
            view = self.raw[name][GUARD_BYTES:GUARD_BYTES + a.nbytes].view(a.dtype).reshape(a.shape)
            view[...] = a
            self.views[name] = view

    def fits(self, arrays: dict[str, np.ndarray]) -> bool:
        """Whether ``arrays`` have exactly the names and byte sizes of these buffers."""
        return set(arrays) == set(self.views) and all(np.asarray(a).nbytes == self.views[n].nbytes
                                                      for n, a in arrays.items())

    def address(self, name: str) -> int:
        """The address of array ``name``'s first element (never null, even when empty)."""
        return int(self.raw[name].ctypes.data) + GUARD_BYTES

    def protected_range(self, name: str) -> tuple[int, int]:
        """The page-aligned range (address, length) that :meth:`protect` makes read-only for ``name``."""
        return self.address(name), self.span[name]

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


_RO_SOURCE = r"""
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Read-only host inputs for the verifier: a write to a protected range ends the process with a
   located report on stderr instead of a bare SIGSEGV.  Faults elsewhere go to the previous handler. */
static uintptr_t lo[64], hi[64];
static int nranges;
static struct sigaction old_segv, old_bus;
static char altstack[1 << 15];

static void put(const char *s) { (void)!write(2, s, strlen(s)); }
static void put_num(unsigned long long v) {
  char b[24]; int i = 23; b[i] = 0;
  do { b[--i] = (char)('0' + v % 10); v /= 10; } while (v);
  put(b + i);
}

static void on_fault(int sig, siginfo_t *si, void *ctx) {
  uintptr_t a = (uintptr_t)si->si_addr;
  for (int i = 0; i < nranges; ++i)
    if (a >= lo[i] && a < hi[i]) {
      put("\ntranspile: input-modified-during-call: range ");
      put_num((unsigned long long)i);
      put(" byte ");
      put_num((unsigned long long)(a - lo[i]));
      put("\n");
      _exit(86);
    }
  (void)ctx;
  sigaction(SIGSEGV, &old_segv, 0);
  sigaction(SIGBUS, &old_bus, 0);
  (void)sig;
}

void ro_install(void) {
  stack_t ss; memset(&ss, 0, sizeof ss);
  ss.ss_sp = altstack; ss.ss_size = sizeof altstack;
  sigaltstack(&ss, 0);
  struct sigaction sa; memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigaction(SIGBUS, &sa, &old_bus);
}

int ro_protect(void *p, unsigned long long n) {
  if (nranges >= 64 || n == 0) return -1;
  if (mprotect(p, n, PROT_READ) != 0) return -1;
  lo[nranges] = (uintptr_t)p; hi[nranges] = (uintptr_t)p + n; ++nranges;
  return nranges - 1;
}

void ro_release(void) {
  for (int i = 0; i < nranges; ++i) mprotect((void *)lo[i], hi[i] - lo[i], PROT_READ | PROT_WRITE);
  nranges = 0;
  sigaction(SIGSEGV, &old_segv, 0);
  sigaction(SIGBUS, &old_bus, 0);
}
"""


class ReadOnlyGuard:
    """Host inputs made read-only (``mprotect``) while a drop-in runs, in the simulator's child.

    A write to a protected page ends the child with ``transpile: input-modified-during-call: range
    K byte B`` on stderr and exit status 86 (:data:`RO_EXIT`); the parent maps range K back to the
    array (the order of :meth:`protect` calls).  Built once with gcc into the verifier's cache.
    """

    def __init__(self) -> None:
        import ctypes

        self.lib = ctypes.CDLL(str(_ro_library()))
        self.lib.ro_protect.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong]
        self.lib.ro_protect.restype = ctypes.c_int
        self.names: list[str] = []

    def protect(self, bufs: HostBuffers, names: list[str]) -> None:
        self.lib.ro_install()
        self.names = []
        for n in names:
            addr, length = bufs.protected_range(n)
            if self.lib.ro_protect(addr, length) >= 0:
                self.names.append(n)

    def release(self) -> None:
        self.lib.ro_release()


RO_EXIT = 86
RO_MARK = "transpile: input-modified-during-call: range "


def _ro_library() -> Any:
    import hashlib
    import os
    import subprocess

    from transpile.verify.reference import cache_dir

    key = hashlib.sha256(_RO_SOURCE.encode()).hexdigest()[:16]
    out = cache_dir("ro") / f"libro-{key}.so"
    if not out.exists():
        src = out.with_suffix(f".{os.getpid()}.c")
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        src.write_text(_RO_SOURCE)
        subprocess.run(["gcc", "-O1", "-fPIC", "-shared", "-o", str(tmp), str(src)], check=True, capture_output=True)
        os.replace(tmp, out)
        src.unlink(missing_ok=True)
    return out

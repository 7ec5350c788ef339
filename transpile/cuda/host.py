"""The drop-in host function's template context: what each array copies, and the per-function state.

:mod:`transpile.cuda` calls :func:`arrays` and :func:`dropin` from
``_KernelEmitter.context``; ``templates/dropin.cu.j2`` renders them.  The
design and its rules are in ``docs/dropin.md``; in short, for each array
parameter of ``NAME``:

* the device buffer comes from ``NAME``'s own stream-ordered memory pool
  (kept between calls, so repeated calls allocate from cached memory);
* copy-in covers the flattened range of the array's bounding box
  (:mod:`passes.footprint`), less its hole (a box the kernels write before
  they read any of it: jacobi-2d's ``B`` but its boundary ring), or nothing
  when the array is never read and proven to be written in full; copy-out
  covers the bounding box of the writes, only for arrays the kernel writes;
* each copy goes through pinned memory: directly when the user's memory is
  already page-locked, through a per-call ``cudaHostRegister`` for large
  ranges, or staged in chunks through ``NAME``'s double-buffered pinned
  staging buffer (the C helpers in the template choose at run time).

Offsets are rendered as ``long long`` element offsets ``[lo, hi)``; the C
helper clamps them to the array, so an empty or out-of-range box copies
nothing instead of overrunning.

:func:`plan` places each copy at a *point* between the phases of ``NAME_device``
(a phase: a top-level statement with launches, and the host statements before
it): an array is copied in at the point before the first phase that touches it
and may be copied out from the point after the last phase that writes it, so
later arrays' copy-ins overlap earlier kernels and early outputs come back
while later kernels run (docs/dropin.md, "Streams and overlap").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from passes import footprint
from passes.accesses import Affine, affine
from transpile import ir

if TYPE_CHECKING:
    from transpile.cuda import _KernelEmitter

LL = "long long"
WHOLE = ("0LL", "LLONG_MAX")
"""The element range meaning "the whole array" (clamped by the C helper)."""
NOTHING = ("0LL", "0LL")


def arrays(em: _KernelEmitter) -> dict[str, dict[str, object]]:
    """The ``arrays`` entries of the template context, by parameter name, in parameter order."""
    fps = footprint.analyze(em.k)
    scalars = {p.name for p in em.k.params if isinstance(p.ty, ir.Scalar)}
    out: dict[str, dict[str, object]] = {}
    for p in em.k.params:
        if not isinstance(p.ty, ir.ArrayType):
            continue
        fp = fps[p.name]
        copy_out = p.intent != "in" and fp.written
        in_bounds = _bounds(p.ty, fp.box, scalars)
        out_bounds = _bounds(p.ty, fp.write_box, scalars)
        if fp.copy_in and in_bounds is not None and out_bounds is not None:
            # Where the write box is not known, the box's bound holds for the writes too: copy-out
            # must stay inside what was copied in, or it would return bytes nobody copied in.
            out_bounds = [(wlo or lo, whi or hi) for (wlo, whi), (lo, hi) in zip(out_bounds, in_bounds)]
        in_range = _range(em, p.ty, in_bounds) if fp.copy_in else NOTHING
        out_range = _range(em, p.ty, out_bounds) if copy_out else NOTHING
        out[p.name] = {
            "name": em.ident(p.name), "label": p.name, "ctype": _ctype(p.ty.elem),
            "dev": em.namer.fresh(f"{p.name}_dev"), "bytes": em.namer.fresh(f"{p.name}_bytes"),
            "host": em.namer.fresh(f"{p.name}_host"),
            "size": em._size(p.ty), "copy_out": copy_out, "copy_in": fp.copy_in,
            "in_lo": in_range[0], "in_hi": in_range[1], "out_lo": out_range[0], "out_hi": out_range[1],
            "why": _why(fp, copy_out),
            "skip_in": _condition(em, cond) if (cond := skip_copy_in_when(fp, scalars)) else "",
            "hole": _hole(em, p.ty, fp, scalars) if fp.copy_in else [],
            "hole_var": em.namer.fresh(f"{p.name}_hole"),
        }
    return out


MAX_HOLE_RANK = 8
"""The rank up to which a copy-in leaves out a hole (the runtime's ``transpile_dropin_in_holed``)."""


def _hole(em: _KernelEmitter, ty: ir.ArrayType, fp: footprint.Footprint, scalars: set[str]) -> list[str]:
    """C text of the copy-in's hole (``transpile_dropin_in_holed``): its rank, or 0 where ``hole_when``
    does not hold at run time, then the extents, then per dimension the lowest and highest index; []
    where the array has no hole the host function can spell (its bounds read only scalar parameters)."""
    hole, when = fp.hole, fp.hole_when
    if hole is None or when is None or not 1 <= len(ty.dims) <= MAX_HOLE_RANK:
        return []
    forms = [b for lo_hi in hole for b in lo_hi] + [a for a, _ in when]
    if any(b is None or not b.names <= scalars for b in forms):
        return []
    rank = str(len(ty.dims)) if not when else f"({_condition(em, when)}) ? {len(ty.dims)} : 0"
    extents = [em.expr.cast_to(d, LL) for d in ty.dims]
    return [rank, *extents, *(_affine_c(em, b) for lo_hi in hole for b in lo_hi if b is not None)]


MAX_POINTS = 32
"""Points a drop-in may have (``TRANSPILE_DROPIN_POINTS`` in the runtime): its events are per point."""


@dataclass(frozen=True)
class Plan:
    """Where each array's copies go, as point numbers ``0..last`` (see the module docstring).

    ``starts`` holds, for each interior point ``1..last-1``, the index of the top-level statement
    of ``NAME_device`` before which it is called; point 0 is before ``NAME_device`` and ``last``
    after it.  ``in_at`` / ``out_after``: per array parameter, the point of its copy-in and the
    point whose mark follows its last write (-1: none).
    """

    starts: tuple[int, ...]
    in_at: dict[str, int]
    out_after: dict[str, int]

    @property
    def last(self) -> int:
        return len(self.starts) + 1


def plan(kernel: ir.Kernel, copy_in: Mapping[str, bool], copy_out: Mapping[str, bool]) -> Plan:
    """The points of ``kernel``'s copies: one phase per top-level statement with launches."""
    body = kernel.body
    has_launch = [ir.has_launch(s) for s in body]
    phases = max(sum(has_launch), 1)
    phase_of: list[int] = []
    seen = 0
    for launch in has_launch:
        phase_of.append(min(seen, phases - 1))
        seen += launch
    first: dict[str, int] = {}
    last_write: dict[str, int] = {}
    for s, ph in zip(body, phase_of):
        for n in ir.walk(s):
            if isinstance(n, ir.Index) and n.array in copy_in:
                first.setdefault(n.array, ph)
            elif isinstance(n, ir.Var) and n.name in copy_in:  # a whole array (a call argument): read and written
                first.setdefault(n.name, ph)
                last_write[n.name] = ph
            if isinstance(n, ir.Assign) and isinstance(n.target, ir.Index) and n.target.array in copy_in:
                last_write[n.target.array] = ph
    # Raw points 0..phases: point j is before phase j, point `phases` after the last one.
    raw_in = {a: first.get(a, 0) for a, c in copy_in.items() if c}
    raw_out = {a: last_write.get(a, phases - 1) + 1 for a, c in copy_out.items() if c}
    used = sorted({0, phases, *raw_in.values(), *raw_out.values()})
    # A return could skip the points after it (an array copied in there would go back unwritten): none.
    # Too many points: none either.  Every copy-in then comes first and every copy-out last.
    if len(used) > MAX_POINTS or any(isinstance(n, ir.Return) for n in ir.walk(kernel)):
        raw_in = dict.fromkeys(raw_in, 0)
        raw_out = dict.fromkeys(raw_out, phases)
        used = [0, phases]
    number = {r: i for i, r in enumerate(used)}
    starts = tuple(phase_of.index(r) for r in used[1:-1])
    return Plan(starts, {a: number[raw_in[a]] if a in raw_in else -1 for a in copy_in},
                {a: number[raw_out[a]] if a in raw_out else -1 for a in copy_in})


def dropin(em: _KernelEmitter) -> dict[str, object]:
    """The drop-in's own names: the static state, its exit hook and the release entry point."""
    state = f"transpile_{em.name}_dropin"
    for name in (state, f"{em.name}_release", f"{em.name}_run"):
        assert name not in em.namer.taken, f"generated name {name} clashes with a name of the module"
    return {"state": state, "at_exit": f"{state}_at_exit", "release": f"{em.name}_release",
            "run": f"{em.name}_run", "stream": f"{state}.stream", "held": em.namer.fresh("held"),
            "list": em.namer.fresh("arrays"), "call": em.namer.fresh("call")}


def _ctype(t: ir.Scalar) -> str:
    from transpile.cuda.printer import ctype

    return ctype(t)


def _why(fp: footprint.Footprint, copy_out: bool) -> str:
    """A comment on what crosses for this array."""
    if fp.box is None:
        return "not accessed: nothing is copied"
    if not fp.copy_in:
        how = ("written in full, every read after a write: no copy-in" if fp.read
               else "written in full, never read: no copy-in")
    elif fp.written and fp.full_when:
        how = ("copied in over its bounding box (elements the kernel skips keep their values), unless the "
               "sizes make the kernel write all of it first")
    elif fp.written:
        how = "copied in over its bounding box (elements the kernel skips keep their values)"
    else:
        how = "copied in over its bounding box"
    return how + ("; copied out over the bounding box of its writes" if copy_out else "")


Bounds = list[tuple[Affine | None, Affine | None]]


def _bounds(ty: ir.ArrayType, box: footprint.Box | None, scalars: set[str]) -> Bounds | None:
    """``box`` with the bounds C cannot spell here (locals) and the extent's own bounds as ``None``."""
    if box is None:
        return None
    params = frozenset(scalars)
    dims = [affine(d, params) for d in ty.dims]
    bounds: Bounds = []
    for (lo, hi), dim in zip(box, dims):
        lo = lo if lo is not None and lo.names <= params else None
        hi = hi if hi is not None and hi.names <= params else None
        lo = None if lo == Affine.of({}, 0) else lo
        hi = None if dim is not None and hi == _plus(dim, -1) else hi
        bounds.append((lo, hi))
    return bounds


def _range(em: _KernelEmitter, ty: ir.ArrayType, bounds: Bounds | None) -> tuple[str, str]:
    """C text of the flattened element range ``[lo, hi)`` of ``bounds`` in an array of type ``ty``."""
    if bounds is None:
        return NOTHING
    if all(lo is None and hi is None for lo, hi in bounds):
        return WHOLE
    lo_terms: list[str] = []
    hi_terms: list[str] = []
    for d, (lo, hi) in enumerate(bounds):
        stride = [em.expr.cast_to(e, LL) for e in ty.dims[d + 1:]]
        lo_terms.append(_times("0LL" if lo is None else _affine_c(em, lo), stride))
        hi_text = f"{em.expr.cast_to(ty.dims[d], LL)} - 1" if hi is None else _affine_c(em, hi)
        hi_terms.append(_times(hi_text, stride))
    lo_text = " + ".join(t for t in lo_terms if t != "0LL") or "0LL"
    return lo_text, " + ".join(hi_terms) + " + 1"


def skip_copy_in_when(fp: footprint.Footprint, scalars: set[str]) -> tuple[tuple[Affine, str], ...] | None:
    """The sizes at which the drop-in copies nothing of ``fp``'s array in (its ``full_when``), when the
    array is copied in otherwise and the condition reads only the function's scalar parameters
    ``scalars`` (the analysis also counts top-level locals, which do not exist yet where the drop-in
    decides its copies)."""
    if not fp.copy_in or not fp.full_when or any(not a.names <= scalars for a, _ in fp.full_when):
        return None
    return fp.full_when


def skip_copy_in(in_at: int, skip: str) -> int | str:
    """The C text of an array's copy-in point: ``in_at``, or -1 (no copy-in) where ``skip`` holds."""
    return f"({skip}) ? -1 : {in_at}" if skip and in_at >= 0 else in_at


def _condition(em: _KernelEmitter, cons: tuple[tuple[Affine, str], ...]) -> str:
    """C text of the conjunction ``cons`` (:attr:`footprint.Footprint.full_when`) over the parameters."""
    return " && ".join(f"{_affine_c(em, Affine(a.coeffs, 0))} {op} {-a.const}LL" for a, op in cons)


def _plus(a: Affine, k: int) -> Affine:
    return Affine(a.coeffs, a.const + k)


def _times(text: str, factors: list[str]) -> str:
    if text == "0LL" or not factors:
        return text
    return " * ".join([f"({text})" if any(c in text for c in "+-") else text, *factors])


def _affine_c(em: _KernelEmitter, a: Affine) -> str:
    """``a`` in ``long long`` arithmetic over the (renamed) scalar parameters."""
    terms: list[str] = []
    for v, c in a.coeffs:
        var = f"({LL}){em.ident(v)}"
        terms.append(var if c == 1 else f"-{var}" if c == -1 else f"{c}LL * {var}")
    if a.const or not terms:
        terms.append(f"{a.const}LL")
    text = terms[0]
    for t in terms[1:]:
        text += f" - {t[1:]}" if t.startswith("-") else f" + {t}"
    return text

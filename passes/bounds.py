"""Bounds analysis: array references that index outside the declared extent for some sizes.

An analysis, not a transform: ``check(kernel) -> list[Finding]``, one per
(reference to an array parameter or a local array, dimension, side) that isl proves can leave the extent
``0 <= index < dim``, with the sizes for which it does.  In C such an access is
undefined behaviour; on the GPU it reads or writes another row or another
buffer, so the drop-in's results differ from the C function's wherever the
two programs stop agreeing.  The CLI reports each finding as a warning
(``out-of-bounds``) before it compiles; the verifier's guard zones then
usually report the same access as a failure.

Exact by construction, never a false alarm from the analysis itself: a
reference counts only where its iteration domain is exact (outside every
``if``, in loops whose bounds are affine in the loop variables outside them
and the kernel's own integer parameters), and a dimension only where its
subscript and its extent are affine in those.  Locals assigned once before
the loops (which :func:`passes.accesses.parameters` treats as parameters)
are left out: isl would not know how they relate to the parameters they are
computed from.  A reference that is reached only under an ``if`` is not
checked.

**Precondition**: any valid kernel (``Launch`` bodies are walked like
blocks).  **Postcondition**: none (nothing is changed).

Example: ``for (i = 0; i < n; i++) A[i + 1] = A[i];`` with ``double A[n]``
gives one finding: the write ``A[i + 1]``, dimension 1, reaches the extent
``n`` for sizes with ``n >= 1``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import islpy as isl

from passes import deps
from passes import footprint as fp
from passes.accesses import Affine, affine
from transpile import ir
from transpile.diagnostics import Loc

#: isl work allowed for one kernel; past it the kernel gets no findings (an analysis that gives up
#: says nothing, it does not guess).
MAX_OPERATIONS = 2_000_000


@dataclass(frozen=True, slots=True)
class Finding:
    """Reference ``array`` (a write if ``write``) leaves its extent in dimension ``dim`` (0-based):
    below 0 (``side`` ``"low"``) or at or past the extent (``"high"``), for sizes in ``sizes``
    (isl's constraints on the parameters; empty when every size does)."""

    loc: Loc | None
    array: str
    write: bool
    dim: int
    side: str
    extent: str
    sizes: str

    @property
    def message(self) -> str:
        verb = "written" if self.write else "read"
        where = "below index 0" if self.side == "low" else f"at or past its extent {self.extent}"
        when = f"for sizes with {self.sizes}" if self.sizes else "for every size that runs it"
        dim = f" in dimension {self.dim + 1}" if self.rank > 1 else ""
        return (f"'{self.array}' is {verb} {where}{dim} {when} (undefined behaviour in C; "
                "the GPU result will not match)")

    rank: int = 1
    condition: str = ""  # the sizes as an isl parameter set (``[p_n] -> { : ... }``), for holds()

    def holds(self, sizes: dict[str, int]) -> bool:
        """Whether the reference leaves the extent at these sizes (every parameter given)."""
        s = isl.Set(self.condition)
        for k in range(s.dim(isl.dim_type.param)):
            name = s.get_dim_name(isl.dim_type.param, k)
            s = s.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(s.get_ctx(), int(sizes[name[2:]])))
        return not s.is_empty()


def check(kernel: ir.Kernel) -> list[Finding]:
    """Every reference of ``kernel`` proven to leave its array's extent for some sizes."""
    params = frozenset(p.name for p in kernel.params if not isinstance(p.ty, ir.ArrayType) and p.ty.is_int)
    arrays = {p.name: p.ty for p in kernel.params if isinstance(p.ty, ir.ArrayType)}
    arrays |= {s.name: s.ty for s in kernel.body if isinstance(s, ir.Alloc)}  # local arrays (top level)
    ctx = isl.Context()
    ctx.set_max_operations(MAX_OPERATIONS)
    fp._LOCAL.ctx = ctx
    out: list[Finding] = []
    try:
        nonempty = _nonempty(arrays, params)
        for site in fp._sites(kernel.body, (), True, params, (), [0]):
            ty = arrays.get(site.array)
            if ty is None or not site.exact or len(site.subscripts) != len(ty.dims):
                continue
            out += _site_findings(site, [affine(d, params) for d in ty.dims], params, nonempty)
    except isl.Error:  # past MAX_OPERATIONS
        return []
    finally:
        fp._LOCAL.ctx = None
    return _unique(out)


def _nonempty(arrays: dict[str, ir.ArrayType], params: frozenset[str]) -> isl.Set:
    """The sizes for which every array parameter has at least one element (where its extents are
    affine): a call with an empty array is not one a finding should be about."""
    cons = [f"{deps.render_affine(a, {})} >= 1" for ty in arrays.values() for d in ty.dims
            if (a := affine(d, params)) is not None]
    names = ", ".join(deps.param_name(p) for p in sorted(params))
    return fp._set(f"[{names}] -> {{ : {' and '.join(cons) or 'true'} }}")


def _site_findings(site: fp._Site, dims: list[Affine | None], params: frozenset[str],
                   nonempty: isl.Set) -> list[Finding]:
    image = fp._image(site, params).intersect_params(nonempty)
    head, svars = fp._head(params, len(dims))
    found = []
    for d, (sub, ext) in enumerate(zip(site.subscripts, dims)):
        if sub is None:
            continue
        sides = [("low", f"{svars[d]} < 0")]
        if ext is not None:
            sides.append(("high", f"{svars[d]} >= {deps.render_affine(ext, {})}"))
        for side, cond in sides:
            bad = image.intersect(fp._set(f"{head}{cond} }}"))
            if bad.is_empty():
                continue
            when = bad.params().coalesce()
            found.append(Finding(site.loc, site.array, site.write, d, side,
                                 _plain(deps.render_affine(ext, {})) if ext is not None else "",
                                 "" if nonempty.is_subset(when) else _sizes(when), len(dims), str(when)))
    return found


def _plain(text: str) -> str:
    """isl-syntax affine text back in the kernel's names: ``1 * p_n + -1`` -> ``n - 1``."""
    text = re.sub(r"\bp_(\w+)", r"\1", text)
    text = re.sub(r"\b1 \* ", "", text).replace("+ -", "- ")
    return re.sub(r" \+ 0$", "", text)


def _sizes(s: isl.Set) -> str:
    """The constraints of a parameter set, as isl prints them, in the kernel's names."""
    text = str(s.coalesce())
    body = text[text.index("{") + 1:text.rindex("}")].strip()
    body = body[1:].strip() if body.startswith(":") else body
    return re.sub(r"\bp_(\w+)", r"\1", body)


def _unique(found: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in found:
        key = (f.loc, f.array, f.write, f.dim, f.side)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out

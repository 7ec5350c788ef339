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
``n`` for every size that runs it (every ``n >= 1``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import islpy as isl

from passes import deps
from passes import footprint as fp
from passes.accesses import affine
from transpile import ir
from transpile.diagnostics import Loc

#: isl work allowed for one kernel; past it the kernel gets no findings (an analysis that gives up
#: says nothing, it does not guess).
MAX_OPERATIONS = 2_000_000


@dataclass(frozen=True, slots=True)
class Finding:
    """Reference ``array`` (a write if ``write``) of rank ``rank`` leaves its extent ``extent`` (the
    declared expression) in dimension ``dim`` (0-based): below 0 (``side`` ``"low"``) or at or past
    the extent (``"high"``).  ``condition`` is the set of sizes for which it does (an isl parameter
    set); ``sizes`` its constraints as the message gives them (empty: every size with no empty array)."""

    loc: Loc | None
    array: str
    write: bool
    rank: int
    dim: int
    side: str
    extent: str
    condition: str
    sizes: str

    @property
    def message(self) -> str:
        verb = "written" if self.write else "read"
        where = "below index 0" if self.side == "low" else f"at or past its extent {self.extent}"
        when = f"for sizes with {self.sizes}" if self.sizes else "for every size that runs it"
        dim = f" in dimension {self.dim + 1}" if self.rank > 1 else ""
        return (f"'{self.array}' is {verb} {where}{dim} {when} (undefined behaviour in C; "
                "the GPU result will not match)")

    def holds(self, sizes: dict[str, int]) -> bool:
        """Whether the reference leaves the extent at these sizes (every parameter given)."""
        values = {deps.param_name(k): v for k, v in sizes.items()}
        s = isl.Set(self.condition)
        for k in range(s.dim(isl.dim_type.param)):
            v = values[s.get_dim_name(isl.dim_type.param, k)]
            s = s.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(s.get_ctx(), int(v)))
        return not s.is_empty()


    def holds_within(self, limits: dict[str, int]) -> bool:
        """Whether the reference leaves the extent for some sizes with ``1 <= p <= limits[p]`` for every
        parameter ``p`` of ``limits`` (the others free)."""
        s = isl.Set(self.condition)
        for k in range(s.dim(isl.dim_type.param)):
            name = re.sub(r"^p_", "", s.get_dim_name(isl.dim_type.param, k))
            if name in limits:
                box = fp.isl_set(f"[{s.get_dim_name(isl.dim_type.param, k)}] -> {{ : 1 <= "
                                 f"{s.get_dim_name(isl.dim_type.param, k)} <= {int(limits[name])} }}")
                s = s.intersect_params(box.align_params(s.get_space().params()))
        return not s.is_empty()

    @property
    def fixed_extent(self) -> bool:
        """Whether the extent it leaves is a constant (a macro's value): a bound on the sizes, not a
        relation between them."""
        return self.side == "high" and not re.search(r"[A-Za-z_]", self.extent)


#: The largest size :func:`extent_limits` looks for.
MAX_LIMIT = 1 << 30


def extent_limits(kernel: ir.Kernel, found: list[Finding]) -> dict[str, int]:
    """For each integer parameter that a constant extent bounds, the largest value at which none of the
    ``fixed_extent`` findings holds with every other parameter at 1: PolyBench's ``ni <= 1000`` for
    ``double C[NI][NJ]`` (``NI`` 1000) and ``for (i = 0; i < ni; i++)``.  The program is defined for
    sizes within these limits unless another finding :meth:`Finding.holds_within` them."""
    fixed = [f for f in found if f.fixed_extent]
    params = [p.name for p in kernel.params if not isinstance(p.ty, ir.ArrayType) and p.ty.is_int]
    limits: dict[str, int] = {}

    def bad(name: str, value: int) -> bool:
        sizes = {**dict.fromkeys(params, 1), name: value}
        try:
            return any(f.holds(sizes) for f in fixed)
        except KeyError:
            return False

    for name in params:
        if not fixed or bad(name, 1) or not bad(name, MAX_LIMIT):
            continue
        lo, hi = 1, MAX_LIMIT  # bad(lo) false, bad(hi) true
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if not bad(name, mid) else (lo, mid)
        limits[name] = lo
    return limits


def check(kernel: ir.Kernel) -> list[Finding]:
    """Every reference of ``kernel`` proven to leave its array's extent for some sizes."""
    params = frozenset(p.name for p in kernel.params if not isinstance(p.ty, ir.ArrayType) and p.ty.is_int)
    arrays = {p.name: p.ty for p in kernel.params if isinstance(p.ty, ir.ArrayType)}
    arrays |= {s.name: s.ty for s in kernel.body if isinstance(s, ir.Alloc)}  # local arrays (top level)
    out: list[Finding] = []
    try:
        with fp.isl_limit(MAX_OPERATIONS):
            nonempty = _nonempty(arrays, params)
            for site in fp.sites(kernel, params):
                ty = arrays.get(site.array)
                if ty is not None and site.exact and len(site.subscripts) == len(ty.dims):
                    out += _site_findings(site, ty, params, nonempty)
    except isl.Error:  # past MAX_OPERATIONS
        return []
    return _unique(out)


def _nonempty(arrays: dict[str, ir.ArrayType], params: frozenset[str]) -> isl.Set:
    """The sizes for which every array has at least one element (where its extents are affine):
    a call with an empty array is not one a finding should be about."""
    cons = [f"{deps.render_affine(a, {})} >= 1" for ty in arrays.values() for d in ty.dims
            if (a := affine(d, params)) is not None]
    names = ", ".join(deps.param_name(p) for p in sorted(params))
    return fp.isl_set(f"[{names}] -> {{ : {' and '.join(cons) or 'true'} }}")


def _site_findings(site: fp.Site, ty: ir.ArrayType, params: frozenset[str], nonempty: isl.Set) -> list[Finding]:
    from transpile.ir import text  # the extent as the source declares it

    image = fp.image(site, params).intersect_params(nonempty)
    head, svars = fp.set_head(params, len(ty.dims))
    found = []
    for d, (sub, dim) in enumerate(zip(site.subscripts, ty.dims)):
        if sub is None:
            continue
        ext = affine(dim, params)
        sides = [("low", f"{svars[d]} < 0")]
        if ext is not None:
            sides.append(("high", f"{svars[d]} >= {deps.render_affine(ext, {})}"))
        for side, cond in sides:
            bad = image.intersect(fp.isl_set(f"{head}{cond} }}"))
            if bad.is_empty():
                continue
            when = bad.params().coalesce()
            found.append(Finding(site.loc, site.array, site.write, len(ty.dims), d, side, text.show_expr(dim),
                                 str(when), "" if nonempty.is_subset(when) else _sizes(when)))
    return found


def _sizes(s: isl.Set) -> str:
    """The constraints of a parameter set, as isl prints them, in the kernel's names."""
    printed = str(s)
    body = printed[printed.index("{") + 1:printed.rindex("}")].strip()
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

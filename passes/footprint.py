"""Footprint analysis: which elements of each array parameter a kernel touches, and whether it writes all of them.

An analysis, not a transform: ``analyze(kernel) -> dict[str, Footprint]``,
one entry per array parameter, for the drop-in's host transfers
(:mod:`transpile.cuda.host`, ``docs/dropin.md``):

* ``box`` / ``write_box``: per dimension, the lowest and highest index that
  any access (``box``) or any write (``write_box``) can touch, as affine
  forms in the kernel's scalar parameters, found with isl (``dim_min`` /
  ``dim_max`` over the union of the accessed index sets, each the image of
  an iteration domain under the subscripts).  A bound is ``None`` where it is
  not one affine piece (a subscript or a loop bound that is not affine, a
  ``max`` of two forms, an unbounded set): that side of the dimension is the
  array's extent.  ``box`` is ``None`` when nothing touches the array.  The
  box is an over-approximation: ``if`` conditions are ignored, non-affine
  loop bounds are dropped.
* ``must_write``: proven that every element of the array's extent is
  written by an unconditional statement instance — each write used for the
  proof is outside every ``if``, has affine subscripts in every dimension
  and sits in loops whose bounds are all affine (so its iteration domain is
  exact), the kernel has no ``return``, and the extents are affine.  The
  proof is an isl subset test for every value of the parameters.  Not
  proven means ``False``: the caller copies the array in.
* ``read``: some statement reads the array; ``reads_input``: some read may
  see a value the kernel did not write first (the caller's value).  A read
  is proven to see a kernel-written value when, for each of its instances,
  an exact unconditional write instance (as for ``must_write``) of the same
  element runs before it: earlier in an enclosing loop, or in the same
  iterations of the common loops and earlier in the text (an isl subset
  test of the read's iteration domain against the union, over the writes,
  of the instances so covered).  ``tmp[i] = 0; ... tmp[i] += ...`` reads
  no input.
* ``box_written`` / ``reads_own`` (computed when :func:`analyze` is asked with ``own=True``, for
  :mod:`passes.expand`): every element of ``write_box`` is written by an exact unconditional
  instance, and every read sees a value the kernel wrote before it.  ``must_write`` is the first
  over the whole extent; a kernel over fixed extents (``double sum[NP]`` filled by
  ``for (p = 0; p < np; p++)``, ``np <= NP``) writes its box in full but not its extent.

**Accesses stay inside the extents.**  An unconditional access with exact bounds (one that runs
whenever its loops do, before any ``return``) outside its array is undefined behaviour in C, so
the parameter values that would make one leave the extent are no values of a correct call:
where a bound of the box is not one affine piece over all values (``min(np - 1, NP - 1)``, for
a fixed extent ``NP`` and a loop bound ``np``), it is taken again over the values for which every
such access of the array stays inside (there ``np <= NP``, and the bound is ``np - 1``).  A bound
that is one piece without that assumption is kept as it is.

Row-major order makes the flattened range ``[offset(lower corner),
offset(upper corner)]`` of a box contain every touched element, because
each index stays inside its extent; :func:`Footprint.span` evaluates it for
given sizes.

**Precondition**: any valid kernel (mapped or not: ``Launch`` bodies are
walked like blocks).  **Postcondition**: none (nothing is changed).

Before/After: not a transform.  For ``for (i = 1; i < n - 1; i++) B[i] =
A[i - 1] + A[i + 1];`` the footprint of ``A`` is ``box ((0, n - 1),)``, not
written; ``B`` has ``write_box ((1, n - 2),)`` and ``must_write`` False
(``B[0]`` and ``B[n-1]`` keep their values).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import islpy as isl

from passes import deps
from passes.accesses import Affine, affine, parameters
from transpile import ir
from transpile.diagnostics import Loc

Bound = Affine | None
"""An affine form over scalar parameters, or ``None``: the extent's own bound (0 or extent - 1)."""
Box = tuple[tuple[Bound, Bound], ...]
"""Per dimension, the lowest and highest index touched (inclusive)."""


@dataclass(frozen=True, slots=True)
class Footprint:
    """What a kernel does to one array parameter (see the module docstring)."""

    name: str
    read: bool
    written: bool
    box: Box | None
    write_box: Box | None
    must_write: bool

    reads_input: bool = True
    box_written: bool = False
    reads_own: bool = False
    full_when: tuple[tuple[Affine, str], ...] | None = None
    hole: Box | None = None
    hole_when: tuple[tuple[Affine, str], ...] | None = None

    @property
    def copy_in(self) -> bool:
        """Whether the host values must reach the device: unless no read sees them and all are overwritten."""
        return self.box is not None and not (self.must_write and not self.reads_input)

    def span(self, dims: tuple[int, ...], sizes: Mapping[str, int], *, writes: bool = False
             ) -> tuple[int, int]:
        """The flattened element range ``[lo, hi)`` of the box (or the write box) for concrete sizes."""
        box = self.write_box if writes else self.box
        total = 1
        for d in dims:
            total *= max(d, 0)
        if box is None or total == 0:
            return 0, 0
        lo = hi = 0
        for d, ((blo, bhi), extent) in enumerate(zip(box, dims)):
            stride = 1
            for e in dims[d + 1:]:
                stride *= e
            lo += (0 if blo is None else _eval(blo, sizes)) * stride
            hi += (extent - 1 if bhi is None else _eval(bhi, sizes)) * stride
        lo, hi = max(lo, 0), min(hi + 1, total)
        return (lo, hi) if lo < hi else (0, 0)


def _eval(a: Affine, sizes: Mapping[str, int]) -> int:
    return a.const + sum(c * int(sizes[v]) for v, c in a.coeffs)


@dataclass(frozen=True, slots=True)
class Site:
    """One array reference with its enclosing loops; ``exact``: unconditional, with exact bounds.

    ``seq`` numbers statements in execution order within one iteration (pre-order;
    a statement's reads share its number and come before its write); ``keys``
    identify the enclosing loops by position, so two sites share a loop only if
    it is the same loop in the text.
    """

    array: str
    write: bool
    subscripts: tuple[Affine | None, ...]
    loops: tuple[ir.For, ...]
    exact: bool
    seq: int = 0
    keys: tuple[int, ...] = ()
    loc: Loc | None = field(default=None, compare=False)


#: The isl work the analysis of one array may do.  Past it (isl's ``dim_max`` took minutes on a
#: random nest of the property tests) the array gets the conservative answer: its whole extent,
#: not proven written, copied in.  The 30 PolyBench kernels need far less (their footprints are
#: the same with and without the limit).
MAX_OPERATIONS = 2_000_000

_LOCAL = threading.local()  # the isl context of the analysis under way (per thread)


@contextmanager
def isl_limit(max_operations: int | None = None) -> Iterator[None]:
    """Inside the block, the sets :func:`isl_set` builds in this thread share a fresh isl context
    whose work is capped at ``max_operations`` (default :data:`MAX_OPERATIONS`, read at the call);
    past it isl raises ``isl.Error``."""
    ctx = isl.Context()
    ctx.set_max_operations(MAX_OPERATIONS if max_operations is None else max_operations)
    _LOCAL.ctx = ctx
    _LOCAL.sets = {}
    try:
        yield
    finally:
        _LOCAL.ctx = None
        _LOCAL.sets = None


def isl_set(text: str) -> isl.Set:
    """``text`` as an isl set, in the context of the enclosing :func:`isl_limit` if any.

    Inside :func:`isl_limit`, each text is parsed once (parsing costs far more than the set
    operations, and one analysis asks for the image of one reference several times); islpy never
    modifies an operand, so the parsed set is shared."""
    ctx = getattr(_LOCAL, "ctx", None)
    if ctx is None:
        return isl.Set(text)
    sets: dict[str, isl.Set] = _LOCAL.sets
    found = sets.get(text)
    if found is None:
        found = sets[text] = isl.Set.read_from_str(ctx, text)
    return found


def sites(kernel: ir.Kernel, params: frozenset[str]) -> list[Site]:
    """Every array reference of ``kernel`` (subscripts affine in ``params`` and the loop variables)."""
    return list(_sites(kernel.body, (), True, params, (), [0]))


def analyze(kernel: ir.Kernel, only: frozenset[str] | set[str] | None = None, *,
            own: bool = False) -> dict[str, Footprint]:
    """The footprint of every array parameter of ``kernel`` (of those named in ``only``, if given), in
    parameter order; ``own`` also proves ``box_written`` and ``reads_own`` (more isl work, which only
    expansion needs)."""
    params = parameters(kernel)
    by_array: dict[str, list[Site]] = {}
    for site in sites(kernel, params):
        by_array.setdefault(site.array, []).append(site)
    returns = any(isinstance(n, ir.Return) for n in ir.statements(kernel))
    out: dict[str, Footprint] = {}
    for p in kernel.params:
        if not isinstance(p.ty, ir.ArrayType) or (only is not None and p.name not in only):
            continue
        mine = by_array.get(p.name, [])
        if not mine:  # untouched: nothing to ask isl (what the general case below answers)
            out[p.name] = Footprint(p.name, read=False, written=False, box=None, write_box=None,
                                    must_write=False, reads_input=False)
            continue
        writes = [s for s in mine if s.write]
        dims = [affine(d, params) for d in p.ty.dims]
        reads = [s for s in mine if not s.write]
        try:
            with isl_limit():
                inside = None if returns else _inside(mine, dims, params)
                must = not returns and _must_write(writes, dims, params)
                covered = (must or own) and all(_covered(r, writes, params) for r in reads)
                write_box = _box(writes, dims, params, inside)
                out[p.name] = Footprint(
                    p.name, read=bool(reads), written=bool(writes),
                    box=_box(mine, dims, params, inside), write_box=write_box, must_write=must,
                    reads_input=bool(reads) and not (must and covered),
                    box_written=own and not returns and _box_written(writes, write_box, dims, params, inside),
                    reads_own=own and covered,
                    full_when=None if must or returns else _full_when(writes, reads, dims, params, inside),
                    **({} if must or returns else _hole(writes, reads, write_box, dims, params, inside)))
        except isl.Error:  # past MAX_OPERATIONS: the whole extent, copied in
            whole = tuple((None, None) for _ in dims)
            out[p.name] = Footprint(p.name, read=bool(reads), written=bool(writes),
                                    box=whole if mine else None, write_box=whole if writes else None,
                                    must_write=False, reads_input=bool(reads))
    return out


def _sites(body: tuple[ir.Stmt, ...], loops: tuple[ir.For, ...], exact: bool, params: frozenset[str],
           keys: tuple[int, ...], counter: list[int]) -> Iterator[Site]:
    """The array references under ``body``; ``counter`` numbers statements (pre-order)."""
    names = params | {lp.var for lp in loops}

    def site(n: ir.Index, write: bool, seq: int) -> Site:
        return Site(n.array, write, tuple(affine(ix, names) for ix in n.indices), loops, exact, seq, keys, n.loc)

    def reads(seq: int, *exprs: ir.Expr | None) -> Iterator[Site]:
        for e in exprs:
            if e is not None:
                yield from (site(n, False, seq) for n in ir.walk(e) if isinstance(n, ir.Index))

    for s in body:
        seq = counter[0]
        counter[0] += 1
        if isinstance(s, ir.Assign):
            yield from reads(seq, s.value)
            if isinstance(s.target, ir.Index):
                yield from reads(seq, *s.target.indices)
                yield site(s.target, True, seq)
        elif isinstance(s, ir.Decl):
            yield from reads(seq, s.init)
        elif isinstance(s, ir.If):
            yield from reads(seq, s.cond)
            yield from _sites(s.then, loops, False, params, keys, counter)
            yield from _sites(s.orelse, loops, False, params, keys, counter)
        elif isinstance(s, ir.For):
            yield from reads(seq, s.lo, s.hi)
            outer = params | {lp.var for lp in loops}
            bounded = affine(s.lo, outer) is not None and affine(s.hi, outer) is not None
            yield from _sites(s.body, loops + (s,), exact and bounded, params, keys + (seq,), counter)
        elif isinstance(s, ir.Launch):
            yield from _sites(s.body, loops, exact, params, keys, counter)
        elif isinstance(s, ir.Return):
            yield from reads(seq, s.value)


# ---------------------------------------------------------------------------
# isl


def set_head(params: frozenset[str], rank: int) -> tuple[str, list[str]]:
    """The text of a set over the parameters and ``rank`` element indices ``s0, s1, ...`` up to its
    constraints (``[p_n] -> { [s0] : ``), and the index names."""
    svars = [f"s{d}" for d in range(rank)]
    return f"[{', '.join(deps.param_name(p) for p in sorted(params))}] -> {{ [{', '.join(svars)}] : ", svars


def image(site: Site, params: frozenset[str]) -> isl.Set:
    """The elements ``site`` touches: its iteration domain's image under the subscripts."""
    head, svars = set_head(params, len(site.subscripts))
    names = {lp.var: f"i{k}" for k, lp in enumerate(site.loops)}
    cons = deps.domain_constraints(site.loops, names, params)
    cons += [f"{s} = {deps.render_affine(sub, names)}" for s, sub in zip(svars, site.subscripts) if sub is not None]
    body = " and ".join(cons) or "true"
    if names:
        body = f"exists ({', '.join(names.values())} : {body})"
    return isl_set(head + body + " }")


def _extent(dims: list[Affine | None], params: frozenset[str]) -> isl.Set:
    """``0 <= s_d < dim_d`` for every dimension (the upper bound only where the extent is affine)."""
    head, svars = set_head(params, len(dims))
    cons = [f"{s} >= 0" for s in svars]
    cons += [f"{s} < {deps.render_affine(d, {})}" for s, d in zip(svars, dims) if d is not None]
    return isl_set(head + (" and ".join(cons) or "true") + " }")


def _union(refs: list[Site], params: frozenset[str]) -> isl.Set:
    sets = [image(s, params) for s in refs]
    u = sets[0]
    for s in sets[1:]:
        u = u.union(s)
    return u.coalesce()


def _box(refs: list[Site], dims: list[Affine | None], params: frozenset[str],
         inside: isl.Set | None = None) -> Box | None:
    if not refs:
        return None
    # Every access stays inside the extent (C semantics): intersecting bounds non-affine subscripts.
    touched = _union(refs, params).intersect(_extent(dims, params))
    out = []
    for d in range(len(dims)):
        lo, hi = _bound(touched, d, lower=True), _bound(touched, d, lower=False)
        if (lo is None or hi is None) and inside is not None:  # over the values of correct calls
            there = touched.intersect_params(inside)
            lo = _bound(there, d, lower=True) if lo is None else lo
            hi = _bound(there, d, lower=False) if hi is None else hi
        out.append((lo, hi))
    return tuple(out)


def _inside(refs: list[Site], dims: list[Affine | None], params: frozenset[str]) -> isl.Set | None:
    """The parameter values for which every exact access of ``refs`` stays inside the extents
    ``dims`` (elsewhere a call is undefined in C); None when no access constrains them."""
    head = f"[{', '.join(deps.param_name(p) for p in sorted(params))}] -> {{ : "
    bad: isl.Set | None = None
    for site in refs:
        if not site.exact:
            continue
        names = {lp.var: f"i{k}" for k, lp in enumerate(site.loops)}
        outside = []
        for sub, dim in zip(site.subscripts, dims):
            if sub is None:
                continue
            at = deps.render_affine(sub, names)
            outside.append(f"{at} < 0")
            if dim is not None:
                outside.append(f"{at} >= {deps.render_affine(dim, {})}")
        if not outside:
            continue
        cons = [*deps.domain_constraints(site.loops, names, params), "(" + " or ".join(outside) + ")"]
        body = " and ".join(cons)
        if names:
            body = f"exists ({', '.join(names.values())} : {body})"
        s = isl_set(head + body + " }")
        bad = s if bad is None else bad.union(s)
    if bad is None or bad.is_empty():
        return None
    return bad.complement().coalesce()


def _box_written(writes: list[Site], box: Box | None, dims: list[Affine | None], params: frozenset[str],
                 inside: isl.Set | None) -> bool:
    """Whether exact unconditional writes cover every element of the write box ``box``."""
    exact = [s for s in writes if s.exact and all(x is not None for x in s.subscripts)]
    if not exact or box is None:
        return False
    head, svars = set_head(params, len(dims))
    cons = []
    for s, (lo, hi), dim in zip(svars, box, dims):
        cons.append(f"{s} >= {0 if lo is None else deps.render_affine(lo, {})}")
        if hi is not None:
            cons.append(f"{s} <= {deps.render_affine(hi, {})}")
        elif dim is not None:
            cons.append(f"{s} < {deps.render_affine(dim, {})}")
        else:
            return False
    want = isl_set(head + " and ".join(cons) + " }")
    if inside is not None:
        want = want.intersect_params(inside)
    return bool(want.is_subset(_union(exact, params)))


def _bound(s: isl.Set, d: int, *, lower: bool) -> Bound:
    """The min (max) of dimension ``d`` as one affine form in the parameters, if it is one."""
    try:
        pw = s.dim_min(d) if lower else s.dim_max(d)
    except isl.Error:  # unbounded
        return None
    pieces = pw.get_pieces()
    if len(pieces) != 1:
        return None
    aff = pieces[0][1]
    if aff.dim(isl.dim_type.div) != 0 or aff.get_denominator_val().to_python() != 1:
        return None
    coeffs: dict[str, int] = {}
    for k in range(aff.dim(isl.dim_type.param)):
        c = int(aff.get_coefficient_val(isl.dim_type.param, k).to_python())
        if c:
            coeffs[str(aff.get_dim_name(isl.dim_type.param, k)).removeprefix("p_")] = c
    return Affine.of(coeffs, int(aff.get_constant_val().to_python()))


def _must_write(writes: list[Site], dims: list[Affine | None], params: frozenset[str]) -> bool:
    exact = [s for s in writes if s.exact and all(x is not None for x in s.subscripts)]
    if not exact or any(d is None for d in dims):
        return False
    return bool(_extent(dims, params).is_subset(_union(exact, params)))


def _full_when(writes: list[Site], reads: list[Site], dims: list[Affine | None], params: frozenset[str],
               inside: isl.Set | None) -> tuple[tuple[Affine, str], ...] | None:
    """The parameter values (of correct calls) for which exact unconditional writes cover the whole
    extent and every read sees a value the kernel wrote, as constraints ``(a, "==")`` (``a == 0``) and
    ``(a, ">=")`` (``a >= 0``) that all hold there; None when there are none, or when they are not one
    conjunction of affine constraints.  A kernel over fixed extents (``double corr[M][M]`` written for
    ``i, j < m``) writes its array in full exactly when ``m == M``: the drop-in then needs no copy-in."""
    exact = [s for s in writes if s.exact and all(x is not None for x in s.subscripts)]
    if not exact or any(d is None for d in dims) or not params:
        return None
    if not all(_covered(r, writes, params) for r in reads):
        return None
    missing = _extent(dims, params).subtract(_union(exact, params))
    return _conjunction(missing, inside)


def _conjunction(missing: isl.Set, inside: isl.Set | None) -> tuple[tuple[Affine, str], ...] | None:
    """The parameter values (of correct calls) for which ``missing`` is empty, as constraints that all
    hold there (see :func:`_full_when`); None when there are none or they are not one conjunction."""
    good = missing.params().complement()
    if inside is not None:
        good = good.intersect(inside)
    good = good.coalesce()
    if good.is_empty():
        return None
    pieces = good.get_basic_sets()
    if len(pieces) != 1:
        return None
    return _constraints(pieces[0].remove_redundancies())


def _sufficient(missing: isl.Set, inside: isl.Set | None) -> tuple[tuple[Affine, str], ...] | None:
    """A conjunction of constraints on the parameters under which ``missing`` is empty for every
    correct call (those in ``inside``): one piece of where it is empty, the one holding the point where
    every parameter is 1024 (sizes worth a GPU) if one does, else the one of fewest constraints, less
    what ``inside`` implies (``()``: always).  None when there is none."""
    good = missing.params().complement().coalesce()
    pieces = [isl.Set.from_basic_set(p) for p in good.get_basic_sets()]
    pieces = [p for p in pieces if inside is None or not p.intersect(inside).is_empty()]
    if not pieces:
        return None
    point = isl.Set.universe(good.get_space())
    for k in range(good.dim(isl.dim_type.param)):
        point = point.fix_val(isl.dim_type.param, k, isl.Val.int_from_si(good.get_ctx(), 1024))
    typical = [p for p in pieces if not p.intersect(point).is_empty()]
    piece = min(typical or pieces, key=lambda p: len(p.get_basic_sets()[0].get_constraints()))
    if inside is not None:  # less what every correct call satisfies
        simpler = piece.gist(inside).coalesce()
        piece = simpler if len(simpler.get_basic_sets()) == 1 else piece
    return _constraints(piece.get_basic_sets()[0].remove_redundancies(), empty=())


def _constraints(piece: isl.BasicSet, *, empty: tuple[()] | None = None) -> tuple[tuple[Affine, str], ...] | None:
    """``piece``'s constraints as ``(a, "==")`` (``a == 0``) and ``(a, ">=")``; ``empty`` where it has none,
    None where it has existentials."""
    if piece.dim(isl.dim_type.div) != 0:
        return None
    out: list[tuple[Affine, str]] = []
    for c in piece.get_constraints():
        coeffs: dict[str, int] = {}
        for k in range(piece.dim(isl.dim_type.param)):
            v = int(c.get_coefficient_val(isl.dim_type.param, k).to_python())
            if v:
                coeffs[str(piece.get_dim_name(isl.dim_type.param, k)).removeprefix("p_")] = v
        out.append((Affine.of(coeffs, int(c.get_constant_val().to_python())), "==" if c.is_equality() else ">="))
    return tuple(out) or empty


def _hole(writes: list[Site], reads: list[Site], box: Box | None, dims: list[Affine | None], params: frozenset[str],
          inside: isl.Set | None) -> dict[str, object]:
    """``hole`` and ``hole_when``: the write box ``box``, when every bound of it is an affine form and,
    for the parameter values of ``hole_when`` (a conjunction, as :attr:`Footprint.full_when`),
    exact unconditional writes cover every element of it and every read of an element of it sees a
    value the kernel wrote before (for every parameter value).  The caller's values of the hole are
    then never seen: a drop-in copies in the array's range less the hole (jacobi-2d's ``B``: its
    boundary ring, when ``tsteps >= 1``); empty when there is no such hole."""
    exact = [s for s in writes if s.exact and all(x is not None for x in s.subscripts)]
    if not exact or box is None or any(lo is None or hi is None for lo, hi in box):
        return {}
    head, svars = set_head(params, len(box))
    cons = [c for sv, (lo, hi) in zip(svars, box)
            for c in (f"{sv} >= {deps.render_affine(lo, {})}", f"{sv} <= {deps.render_affine(hi, {})}")]
    hole = isl_set(head + " and ".join(cons) + " }")
    if not all(_covered(r, writes, params, within=hole) for r in reads):
        return {}
    when = _sufficient(hole.subtract(_union(exact, params)), inside)
    return {} if when is None else {"hole": box, "hole_when": when}


def _covered(read: Site, writes: list[Site], params: frozenset[str], *, within: isl.Set | None = None) -> bool:
    """Whether every instance of ``read`` reads an element an exact write instance wrote before it (of
    the instances that read an element of ``within``, if given)."""
    if any(x is None for x in read.subscripts):
        return within is not None and not _reaches(read, params, within)
    exact = [w for w in writes if w.exact and all(x is not None for x in w.subscripts)]
    if not exact:
        return False
    head = f"[{', '.join(deps.param_name(p) for p in sorted(params))}] -> {{ "
    jn = {lp.var: f"j{k}" for k, lp in enumerate(read.loops)}
    jv = list(jn.values())
    dom_r = " and ".join(deps.domain_constraints(read.loops, jn, params)) or "true"
    if within is not None:  # the instances whose element lies in `within`
        dom_r += " and " + _in_set(read, jn, within)
    domain = isl_set(f"{head}[{', '.join(jv)}] : {dom_r} }}")
    covered = domain.subtract(domain)  # empty, same space
    for w in exact:
        inames = {lp.var: f"i{k}" for k, lp in enumerate(w.loops)}
        iv = list(inames.values())
        m = 0  # common loops: the same loops in the text
        while m < min(len(w.keys), len(read.keys)) and w.keys[m] == read.keys[m]:
            m += 1
        orders = []
        for level in range(m):  # earlier in the loop at `level`, equal outside it
            sign = 1 if read.loops[level].step > 0 else -1
            eq = [f"{iv[k]} = {jv[k]}" for k in range(level)]
            orders.append(" and ".join([*eq, f"{sign} * ({jv[level]} - {iv[level]}) > 0"]))
        if w.seq < read.seq:  # the same iterations of the common loops, earlier in the text
            orders.append(" and ".join([f"{iv[k]} = {jv[k]}" for k in range(m)]) or "true")
        if not orders:
            continue
        cons = deps.domain_constraints(w.loops, inames, params)
        cons += [f"{deps.render_affine(a, jn)} = {deps.render_affine(b, inames)}" for a, b in zip(read.subscripts, w.subscripts)
                 if a is not None and b is not None]  # all are: checked above
        cons.append("(" + " or ".join(f"({o})" for o in orders) + ")")
        body = " and ".join(cons)
        if iv:
            body = f"exists ({', '.join(iv)} : {body})"
        covered = covered.union(isl_set(f"{head}[{', '.join(jv)}] : {dom_r} and {body} }}"))
    return bool(domain.is_subset(covered))


def _in_set(read: Site, names: dict[str, str], within: isl.Set) -> str:
    """The constraint, over the read's loop variables ``names``, that its element lies in the box
    ``within`` (a conjunction of bounds on ``s0, s1, ...``, as :func:`_hole` builds it)."""
    (piece,) = within.get_basic_sets()
    out = []
    for c in piece.get_constraints():
        terms = []
        for d, sub in enumerate(read.subscripts):
            k = int(c.get_coefficient_val(isl.dim_type.set, d).to_python())
            if k:
                terms.append(f"{k} * ({deps.render_affine(sub, names)})")
        for k in range(piece.dim(isl.dim_type.param)):
            v = int(c.get_coefficient_val(isl.dim_type.param, k).to_python())
            if v:
                terms.append(f"{v} * {piece.get_dim_name(isl.dim_type.param, k)}")
        terms.append(str(int(c.get_constant_val().to_python())))
        out.append(f"{' + '.join(terms)} {'=' if c.is_equality() else '>='} 0")
    return " and ".join(out) or "true"


def _reaches(read: Site, params: frozenset[str], within: isl.Set) -> bool:
    """Whether ``read`` (a subscript not affine) may touch an element of ``within``: its known
    subscripts' image meets it (the unknown ones range over everything)."""
    return not image(read, params).intersect(within).is_empty()

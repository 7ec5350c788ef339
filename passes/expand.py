"""Array expansion: a scratch array that every iteration of a loop nest fills afresh gets one copy per iteration.

PolyBench's doitgen reuses one vector for every ``(r, q)``::

    for r in 0..nr {
      for q in 0..nq {
        for p in 0..np { sum[p] = 0.0; for s in 0..np { sum[p] += A[r][q][s] * C4[s][p]; } }
        for p in 0..np { A[r][q][p] = sum[p]; }
      }
    }

As one array, ``sum`` carries output and anti dependences on ``r`` and ``q``,
so both run on the host: 55000 iterations of two small launches at
EXTRALARGE.  But every iteration writes all of ``sum`` before it reads any of
it, so no value crosses iterations: with a copy per iteration
(``sum_x[r][q][p]``) the ``(r, q, p)`` space is parallel.

**Precondition**: valid IR without ``Launch`` (runs before distribution).

**Rule.**  A top-level nest whose perfect prefix of loops ``P`` (step 1,
bounds invariant: they read no array and no loop variable) has a body ``B``,
and an array parameter or top-level local array (``Alloc``) ``X`` accessed in
``B`` with subscripts that use no loop of ``P`` and nowhere else in the nest.  Treating ``P``'s variables as
parameters, :func:`passes.footprint.analyze` on ``B`` must prove that ``B``
writes every element of ``X`` (``must_write``: unconditional affine writes,
for every value of the parameters) and that every read of ``X`` in ``B`` sees
a value ``B`` wrote before it (``reads_input`` False).  Then no value of ``X``
flows between iterations of ``P`` or in from before the nest, and each
iteration's ``X`` is its own: ``X[s]`` in ``B`` becomes
``X_x[p1 - lo1]...[pd - lod][s]``, a kernel-local array (``Alloc``).  Since
every iteration writes all of ``X``, its value after the nest is the last
iteration's: a copy ``X[e] = X_x[hi1 - lo1 - 1]...[e]`` follows the nest,
when every loop of ``P`` runs at least once (otherwise ``X`` is untouched, as
before).  Over fixed extents (``double sum[NP]`` filled by ``for (p = 0; p < np; p++)``,
``np <= NP``) ``B`` writes its box ``0..np - 1`` in full but not the extent: the
rule then takes the box (footprint's ``box_written`` and ``reads_own``, the box
depending on no loop of ``P``), and the copy after the nest covers the box only;
the elements outside keep their values.  A local array that nothing outside the nest touches needs neither the
copy nor itself: both go (the C front end makes one of every array declared
in a loop body, e.g. a per-row scratch row).

The expansion is kept only if every loop of ``P`` becomes parallel
(:func:`passes.deps.parallel_loops`): the copies then serve parallel
iterations.  It costs ``prod(trips of P) x size of X`` of device memory
(doitgen at EXTRALARGE: 119 MB) and one copy of ``X`` after the nest.
"""

from __future__ import annotations

import dataclasses

from passes import budget, deps, footprint
from passes.accesses import Affine
from passes.builders import copy_nest, fresh_name
from transpile import ir


def run(kernel: ir.Kernel) -> ir.Kernel:
    """``kernel`` with its expandable scratch arrays expanded (see the module docstring)."""
    if any(isinstance(n, (ir.Launch, ir.Return)) for n in ir.walk(kernel)):
        return kernel
    # NOTE: an expansion puts an Alloc first and a copy after its nest, so each nest of the original
    # body is looked up afresh (by identity) in the current one.
    # (positions and local arrays are recomputed only when an expansion changed the body)
    positions: dict[int, int] = {}
    for nest in [s for s in kernel.body if isinstance(s, ir.For)]:
        prefix = _prefix(nest)
        if not prefix:
            continue
        if not positions:
            positions = {id(s): n for n, s in enumerate(kernel.body)}
        index = positions[id(nest)]
        try:
            budget.check()
            for array, box in _candidates(kernel, prefix).items():
                trial = _expand(kernel, index, prefix, array, box)
                if trial is not None and _all_parallel(trial[0], trial[1], len(prefix)):
                    kernel = trial[0]
                    positions = {}
                    break  # the nest was rebuilt: one array per nest
        except budget.BudgetExceeded:
            break  # out of budget (passes/budget.py): the nests expanded so far
    return kernel


def _prefix(nest: ir.For) -> list[ir.For]:
    """The perfect prefix of ``nest`` whose loops have step 1 and invariant bounds (possibly empty)."""
    loops: list[ir.For] = []
    names: set[str] = set()
    s: ir.Stmt = nest
    while isinstance(s, ir.For) and s.step == 1 and not _uses(s.lo, names) and not _uses(s.hi, names):
        if _reads(s.lo) or _reads(s.hi):
            break
        loops.append(s)
        names.add(s.var)
        if len(s.body) != 1 or not isinstance(s.body[0], ir.For):
            break
        s = s.body[0]
    return loops


def _uses(e: ir.Expr, names: set[str]) -> bool:
    return any(isinstance(n, ir.Var) and n.name in names for n in ir.walk(e))


def _reads(e: ir.Expr) -> bool:
    return any(isinstance(n, ir.Index) for n in ir.walk(e))


def _candidates(kernel: ir.Kernel, prefix: list[ir.For]) -> dict[str, footprint.Box | None]:
    """Array parameters written in the prefix's body, whose subscripts there use no prefix loop, that the
    body writes in full before any read of them (footprint analysis with the prefix loops as parameters),
    each with the part every iteration writes: None for all of it, else its box (see :func:`_written`)."""
    body = prefix[-1].body
    vars_ = {lp.var for lp in prefix}
    written = sorted({n.target.array for s in body for n in ir.walk(s)
                      if isinstance(n, ir.Assign) and isinstance(n.target, ir.Index)})
    if not written:
        return {}
    # The body as a kernel of its own, the prefix loops' variables as (integer) parameters, and the
    # kernel's local arrays as array parameters (footprint analyses parameters); only the arrays written
    # here are asked about (a generated function may have thousands of array parameters).
    allocs = tuple(ir.Param(a.name, a.ty, "inout", loc=a.loc) for a in kernel.body if isinstance(a, ir.Alloc))
    params = (*kernel.params, *allocs, *(ir.Param(lp.var, lp.ty, loc=lp.loc) for lp in prefix))
    fps = footprint.analyze(ir.Kernel(f"{kernel.name}_body", params, body, loc=kernel.loc),
                              only=set(written), own=True)
    out: dict[str, footprint.Box | None] = {}
    for name in written:
        fp = fps.get(name)  # array parameters and local arrays only
        if fp is None or not _written(fp, vars_):
            continue
        refs = [n for s in body for n in ir.walk(s) if isinstance(n, ir.Index) and n.array == name]
        if not any(_uses(x, vars_) for r in refs for x in r.indices):
            out[name] = None if fp.must_write else fp.write_box
    return out


def _written(fp: footprint.Footprint, prefix_vars: set[str]) -> bool:
    """Whether every iteration of the prefix writes the same part of the array before any read of it:
    all of it (``must_write``), or its write box, when that box depends on no prefix loop (over fixed
    extents, ``double sum[NP]`` filled by ``for (p = 0; p < np; p++)``: the box ``0..np - 1``)."""
    if fp.must_write and not fp.reads_input:
        return True
    if not (fp.box_written and fp.reads_own) or fp.write_box is None:
        return False
    return all(b is None or not (b.names & prefix_vars) for pair in fp.write_box for b in pair)


def _expand(kernel: ir.Kernel, index: int, prefix: list[ir.For], array: str,
            box: footprint.Box | None) -> tuple[ir.Kernel, int] | None:
    """``kernel`` with ``array`` expanded over ``prefix`` (the nest at ``kernel.body[index]``), and the
    rebuilt nest's position in it; None where the trip counts' types differ.  ``box``: the part of
    ``array`` every iteration writes, copied back after the nest (None: all of it)."""
    p = kernel.param(array) or next(a for a in kernel.body if isinstance(a, ir.Alloc) and a.name == array)
    assert isinstance(p.ty, ir.ArrayType)
    used = ir.identifiers(kernel)
    name = fresh_name(f"{array}_x", used)
    trips = [_trips(lp) for lp in prefix]
    if any(t.ty != prefix[0].ty for t in trips):
        return None
    ty = ir.ArrayType(p.ty.elem, (*trips, *p.ty.dims))
    loc = kernel.loc
    lead = tuple(_sub(ir.Var(lp.var, lp.ty, loc=loc), lp.lo) for lp in prefix)
    body = _Rename(array, name, lead).block(prefix[-1].body)
    nest = _rebuild(prefix, body)
    # After the nest, the last iteration's copy is the array's value (every iteration writes all of it).
    last = tuple(ir.Binary("-", t, ir.Const(1, t.ty, loc=loc), t.ty, loc=loc) for t in trips)
    copy = (copy_nest(array, (), name, last, p.ty, "x", used, loc) if box is None
            else _copy_box(array, name, last, p.ty, box, used, kernel, loc))
    if copy is None:
        return None
    ran = None
    for t in trips:
        c = ir.Binary(">", t, ir.Const(0, t.ty, loc=loc), ir.I32, loc=loc)
        ran = c if ran is None else ir.Binary("&&", ran, c, ir.I32, loc=loc)
    assert ran is not None
    back = ir.If(ran, (copy,), (), loc=loc)
    before, after = kernel.body[:index], kernel.body[index + 1:]
    if isinstance(p, ir.Alloc) and not any(isinstance(n, ir.Index) and n.array == array
                                           for n in ir.walk(ir.Kernel("k", (), (*before, *after)))):
        # A local array used in this nest alone: its value after it is never read, so neither the
        # copy back nor the array itself is needed.
        before = tuple(s for s in before if s is not p)
        return dataclasses.replace(kernel, body=(ir.Alloc(name, ty, loc=loc), *before, nest, *after)), len(before) + 1
    new_body = (ir.Alloc(name, ty, loc=loc), *before, nest, back, *after)
    return dataclasses.replace(kernel, body=new_body), index + 1


def _copy_box(dst: str, src: str, lead: tuple[ir.Expr, ...], ty: ir.ArrayType, box: footprint.Box,
              used: set[str], kernel: ir.Kernel, loc: ir.Loc | None) -> ir.Stmt | None:
    """``dst[v] = src[lead][v]`` for ``v`` over ``box`` (a bound None: the extent's own); None where a
    bound names anything but the kernel's integer scalar parameters."""
    types = {p.name: p.ty for p in kernel.params if isinstance(p.ty, ir.Scalar) and p.ty.is_int}
    if any(v not in types for pair in box for b in pair if b is not None for v in b.names):
        return None
    index = ir.I64 if any(d.ty.bits > 32 for d in ty.dims) else ir.I32
    names: list[str] = []
    for _ in ty.dims:
        names.append(fresh_name(f"x{len(names)}", used))
        used.add(names[-1])
    subs = tuple(ir.Var(v, index, loc=loc) for v in names)
    stmt: ir.Stmt = ir.Assign(ir.Index(dst, subs, ty.elem, loc=loc),
                              ir.Index(src, (*lead, *subs), ty.elem, loc=loc), loc=loc)
    for v, d, (lo, hi) in reversed(list(zip(names, ty.dims, box))):
        start = ir.Const(0, index, loc=loc) if lo is None else _affine_expr(lo, index, types, loc)
        end = (d if d.ty == index else ir.Cast(d, index, loc=loc)) if hi is None else _affine_expr(
            Affine(hi.coeffs, hi.const + 1), index, types, loc)
        stmt = ir.For(v, index, start, end, 1, (stmt,), loc=loc)
    return stmt


def _affine_expr(a: Affine, ty: ir.Scalar, types: dict[str, ir.Scalar], loc: ir.Loc | None) -> ir.Expr:
    """``a`` (over the integer scalar parameters typed by ``types``) as an expression of type ``ty``."""
    out: ir.Expr | None = None
    for v, c in a.coeffs:
        var: ir.Expr = ir.Var(v, types[v], loc=loc)
        var = var if types[v] == ty else ir.Cast(var, ty, loc=loc)
        term = var if c == 1 else ir.Binary("*", ir.Const(c, ty, loc=loc), var, ty, loc=loc)
        out = term if out is None else ir.Binary("+", out, term, ty, loc=loc)
    if out is None:
        return ir.Const(a.const, ty, loc=loc)
    return out if a.const == 0 else ir.Binary("+", out, ir.Const(a.const, ty, loc=loc), ty, loc=loc)


def _trips(lp: ir.For) -> ir.Expr:
    """The trip count of a step-1 loop as an extent: ``hi - lo`` clamped at 0 (an empty loop
    ``1..m - 1`` at ``m = 1`` must not give the copy a negative extent); a parameter ``n`` for
    ``0..n`` (an extent of the same value where the loop runs, as the C front end gives a VLA's)."""
    if isinstance(lp.lo, ir.Const) and lp.lo.value == 0 and isinstance(lp.hi, (ir.Var, ir.Const)):
        return lp.hi
    diff = _sub(lp.hi, lp.lo)
    zero = ir.Const(0, diff.ty, loc=diff.loc)
    return ir.Select(ir.Binary(">", diff, zero, ir.I32, loc=diff.loc), diff, zero, diff.ty, loc=diff.loc)


def _sub(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(b, ir.Const) and b.value == 0:
        return a
    return ir.Binary("-", a, b, a.ty, loc=a.loc)


def _rebuild(prefix: list[ir.For], body: tuple[ir.Stmt, ...]) -> ir.For:
    out: ir.Stmt | None = None
    for lp in reversed(prefix):
        out = dataclasses.replace(lp, body=body if out is None else (out,))
    assert isinstance(out, ir.For)
    return out


def _all_parallel(kernel: ir.Kernel, position: int, depth: int) -> bool:
    """Whether the first ``depth`` loops of the nest at ``kernel.body[position]`` carry no dependence."""
    loops: list[ir.For] = []
    s: ir.Stmt = kernel.body[position]
    for _ in range(depth):
        assert isinstance(s, ir.For)
        loops.append(s)
        s = s.body[0]
    return deps.proven_parallel(kernel, loops)


class _Rename(ir.Transformer):
    """``array[s]`` -> ``name[lead][s]`` everywhere (reads and writes)."""

    def __init__(self, array: str, name: str, lead: tuple[ir.Expr, ...]) -> None:
        self.array, self.name, self.lead = array, name, lead

    def block(self, body: tuple[ir.Stmt, ...]) -> tuple[ir.Stmt, ...]:
        return tuple(self.transform(s) for s in body)

    def visit_Index(self, e: ir.Index) -> ir.Node:
        e2 = self.generic_visit(e)
        if e2.array != self.array:
            return e2
        return dataclasses.replace(e2, array=self.name, indices=(*self.lead, *e2.indices))

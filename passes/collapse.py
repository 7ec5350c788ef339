"""Collapse a launch's two outer ``par`` loops into one, where every array they index is laid out so.

An analysis with a rewrite, used at emission (:mod:`transpile.cuda`) and by the cost model: the IR has
no array views, so the collapsed launch is never put back into a kernel.  It reads arrays of rank
``n`` as arrays of rank ``n - 1`` whose first extent is the product of the first two; only the
printer's flattening extents change (:class:`Collapsed` ``arrays``), the addresses do not.

**Precondition**: ``launch`` comes from ``passes.map_gpu`` (its ``par`` loops carry no dependence).

**Shape recognised** (anything else: ``None``)::

    launch {
      for r in 0..R par(z) {                    # lo 0, step 1; R, Q read no array and no loop variable
        for q in 0..Q par(y) {
          for p in ... par(x) { BODY }          # r and q appear in BODY only as X[r][q][...]
        }
      }
    }

Every reference to an array ``X`` that ``BODY`` indexes with ``r`` or ``q`` is ``X[r][q][rest]``,
with ``r`` and ``q`` nowhere in ``rest``, and ``X``'s second extent is ``Q`` itself (the same
expression).  Then ``X[r][q][rest]`` is at the same address as ``X'[r * Q + q][rest]``, ``X'``
being ``X`` with its first two extents merged, and ``(r, q) -> r * Q + q`` is a bijection from the
iteration space onto ``0 .. R * Q``.  The ``par`` loops carry no dependence, so enumerating
``rq = r * Q + q`` instead of ``(r, q)`` runs the same statement instances on the same elements:
the launch is unchanged but for the order of independent instances.

**Result**::

    launch {
      for rq in 0..(R > 0 && Q > 0 ? (i64)R * (i64)Q : 0) par(y) {
        for p in ... par(x) { BODY[X[r][q][rest] := X[rq][rest]] }
      }
    }

(the guard keeps the trip count 0 when the product of two negative extents would be positive).
Why: doitgen's ``sum[r][q][p] += A[r][q][s] * C4[s][p]`` becomes a 2-D matmul of
``(R * Q) x P`` outputs that :mod:`passes.tile` plans (tensor cores, shared tiles); with three
``par`` loops it had stayed a plain launch, every ``sum`` update a global load and store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from passes import tile
from passes.builders import fresh_name
from transpile import ir


@dataclass(frozen=True, slots=True)
class Collapsed:
    """The collapsed launch, its new loop variable, and the arrays read through merged extents."""

    launch: ir.Launch
    var: str
    arrays: frozenset[str]
    outer: tuple[ir.For, ir.For]  # the two loops merged, outermost first


def plan(launch: ir.Launch, options: tile.Options | None, arrays: Mapping[str, ir.ArrayType],
         used: set[str]) -> tuple[tile.Plan, Collapsed | None] | None:
    """The tiling plan of ``launch`` as it is, else of its collapsed form (with that form), else None.

    What the emitter (:mod:`transpile.cuda`) and the cost model both do with a launch; the arguments
    are :func:`collapse`'s, ``options`` :func:`passes.tile.plan`'s.
    """
    direct = tile.plan(launch, options)
    if direct is not None:
        return direct, None
    flat = collapse(launch, arrays, used)
    merged = tile.plan(flat.launch, options) if flat is not None else None
    return (merged, flat) if merged is not None else None


def collapse(launch: ir.Launch, arrays: Mapping[str, ir.ArrayType], used: set[str]) -> Collapsed | None:
    """``launch`` with its two outer ``par`` loops merged (see the module docstring), or None.

    ``arrays``: the type of every array the launch may reference (parameters and allocations);
    ``used``: names the new loop variable must not take.
    """
    if len(launch.body) != 1:
        return None
    r = launch.body[0]
    if not (isinstance(r, ir.For) and r.par is not None and len(r.body) == 1):
        return None
    q = r.body[0]
    if not (isinstance(q, ir.For) and q.par is not None and len(q.body) == 1):
        return None
    p = q.body[0]
    if not (isinstance(p, ir.For) and p.par is not None):
        return None
    for loop in (r, q):
        if not (loop.step == 1 and loop.ty.is_int and loop.ty.is_signed and _is_zero(loop.lo)):
            return None
        if _reads(loop.hi) or tile.var_names(loop.hi) & {r.var, q.var}:
            return None
    if r.var == q.var:
        return None
    outer = {r.var, q.var}
    # No shadowing: r and q keep one meaning throughout the body.
    for n in ir.walk(p):
        if (isinstance(n, ir.For) and n.var in outer) or (isinstance(n, ir.Decl) and n.name in outer):
            return None
    merged: set[str] = set()
    for n in ir.walk(p):
        if isinstance(n, ir.Index) and tile.var_names(n) & outer:
            merged.add(n.array)
    if not merged:
        return None
    for n in ir.walk(p):
        if not isinstance(n, ir.Index) or n.array not in merged:
            continue
        ty = arrays.get(n.array)
        if ty is None or ty.rank != len(n.indices) or ty.rank < 2 or ty.dims[1] != q.hi:
            return None
        if not (_is_var(n.indices[0], r.var) and _is_var(n.indices[1], q.var)):
            return None
        if any(tile.var_names(x) & outer for x in n.indices[2:]):
            return None
    # r and q only as those leading subscripts (not in p's bounds, not in any other expression).
    stripped = _Merge(merged, None).transform(p)
    if any(isinstance(n, ir.Var) and n.name in outer for n in ir.walk(stripped)):
        return None
    var = fresh_name(f"{r.var}{q.var}", used | ir.identifiers(launch))
    rq = ir.Var(var, ir.I64, loc=q.loc)
    body = _Merge(merged, rq).transform(p)
    wide = [h if h.ty == ir.I64 else ir.Cast(h, ir.I64, loc=h.loc) for h in (r.hi, q.hi)]
    positive = ir.Binary("&&", ir.Binary(">", r.hi, ir.Const(0, r.hi.ty), ir.I32),
                         ir.Binary(">", q.hi, ir.Const(0, q.hi.ty), ir.I32), ir.I32)
    hi = ir.Select(positive, ir.Binary("*", wide[0], wide[1], ir.I64), ir.Const(0, ir.I64), ir.I64)
    loop = ir.For(var, ir.I64, ir.Const(0, ir.I64), hi, 1, (body,), par="y", loc=r.loc)
    return Collapsed(ir.Launch((loop,), launch.form, loc=launch.loc), var, frozenset(merged), (r, q))


class _Merge(ir.Transformer):
    """``X[r][q][rest]`` -> ``X[rq][rest]`` for the merged arrays (``rq`` None: drop both)."""

    def __init__(self, merged: set[str], rq: ir.Var | None) -> None:
        self.merged, self.rq = merged, rq

    def visit_Index(self, e: ir.Index) -> ir.Node:
        if e.array not in self.merged:
            return self.generic_visit(e)
        rest = tuple(self.transform(x) for x in e.indices[2:])
        lead = (self.rq,) if self.rq is not None else (ir.Const(0, ir.I64),)
        return ir.Index(e.array, (*lead, *rest), e.ty, loc=e.loc)  # type: ignore[arg-type]


def _is_zero(e: ir.Expr) -> bool:
    return isinstance(e, ir.Const) and e.value == 0


def _is_var(e: ir.Expr, name: str) -> bool:
    return isinstance(e, ir.Var) and e.name == name


def _reads(e: ir.Node) -> bool:
    return any(isinstance(n, ir.Index) for n in ir.walk(e))

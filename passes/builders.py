"""IR construction helpers shared by the transforms (:mod:`passes.snapshot`, :mod:`passes.expand`,
:mod:`passes.reschedule`, :mod:`passes.tile`)."""

from __future__ import annotations

from transpile import ir


def fresh_name(base: str, used: set[str]) -> str:
    """``base``, or ``base1``, ``base2``, ...: the first not in ``used`` (the caller adds it)."""
    name, k = base, 1
    while name in used:
        name, k = f"{base}{k}", k + 1
    return name


def copy_nest(dst: str, dst_lead: tuple[ir.Expr, ...], src: str, src_lead: tuple[ir.Expr, ...],
              ty: ir.ArrayType, prefix: str, used: set[str], loc: ir.Loc | None) -> ir.Stmt:
    """``for v0 .. { for v1 .. { dst[dst_lead][v0][v1] = src[src_lead][v0][v1]; } }`` over ``ty``'s extents.

    The loop variables are fresh names ``prefix0``, ``prefix1``, ... (added to ``used``); they are
    64-bit when an extent is.
    """
    index = ir.I64 if any(d.ty.bits > 32 for d in ty.dims) else ir.I32
    names: list[str] = []
    for _ in ty.dims:
        names.append(fresh_name(f"{prefix}{len(names)}", used))
        used.add(names[-1])
    subs = tuple(ir.Var(v, index, loc=loc) for v in names)
    stmt: ir.Stmt = ir.Assign(ir.Index(dst, (*dst_lead, *subs), ty.elem, loc=loc),
                              ir.Index(src, (*src_lead, *subs), ty.elem, loc=loc), loc=loc)
    for v, d in reversed(list(zip(names, ty.dims))):
        hi = d if d.ty == index else ir.Cast(d, index, loc=loc)
        stmt = ir.For(v, index, ir.Const(0, index, loc=loc), hi, 1, (stmt,), loc=loc)
    return stmt


